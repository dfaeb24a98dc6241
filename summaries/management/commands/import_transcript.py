"""Store a JSON-lines transcript as a new session (format in ``sessions_app.transcripts``).

Every line is checked before anything is stored; bad lines are reported by
line number and then nothing is stored. A good transcript is stored in one
transaction and summarized in the background like live traffic.
"""

from __future__ import annotations

import sys
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from sessions_app.transcripts import parse_transcript, transcript_import

ERRORS_SHOWN = 50


class Command(BaseCommand):
    help = "Import a JSON-lines transcript (one episode per line) as a new session of --owner."

    def add_arguments(self, parser):
        parser.add_argument("file", help="transcript file, or - for stdin")
        parser.add_argument("--owner", required=True, help="username of the session's owner")
        parser.add_argument("--title", help="session title (default: the header's, else the file name)")

    def handle(self, *args, file: str, owner: str, title: str | None, **options) -> None:
        try:
            user = get_user_model().objects.get_by_natural_key(owner)
        except get_user_model().DoesNotExist:
            raise CommandError(f"No user {owner!r}.") from None
        if file == "-":
            transcript = parse_transcript(sys.stdin.buffer)
        else:
            try:
                with open(file, "rb") as fh:
                    transcript = parse_transcript(fh)
            except OSError as exc:
                raise CommandError(f"Cannot read {file}: {exc.strerror}.") from None
        if transcript.errors:
            for number, problem in transcript.errors[:ERRORS_SHOWN]:
                self.stderr.write(f"line {number}: {problem}")
            more = len(transcript.errors) - ERRORS_SHOWN
            if more > 0:
                self.stderr.write(f"... and {more} more bad lines")
            raise CommandError(f"{len(transcript.errors)} bad lines in {file}; nothing was imported.")
        if not transcript.episodes:
            raise CommandError(f"No episodes in {file}; nothing was imported.")
        if title is None and not transcript.title and file != "-":
            title = Path(file).stem
        session = transcript_import(owner=user, transcript=transcript, title=title)
        self.stdout.write(
            self.style.SUCCESS(
                f"Imported {len(transcript.episodes)} episodes as session {session.uuid} "
                f"({session.title or 'untitled'}); summarization was requested."
            )
        )
