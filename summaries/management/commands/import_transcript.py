"""Store a JSON-lines transcript as new sessions (format in ``sessions_app.transcripts``,
summary lines in ``summaries.transfer``): one session, or a user's whole export.

Every line is checked before anything is stored; bad lines are reported by
line number and then nothing is stored. A good transcript is stored in one
transaction and summarized in the background like live traffic.
"""

from __future__ import annotations

import sys
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from summaries.transfer import memory_import, parse_memory

ERRORS_SHOWN = 50


class Command(BaseCommand):
    help = "Import a JSON-lines transcript (one or many sessions, with their summaries) as new sessions of --owner."

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
            sessions, errors = parse_memory(sys.stdin.buffer)
        else:
            try:
                with open(file, "rb") as fh:
                    sessions, errors = parse_memory(fh)
            except OSError as exc:
                raise CommandError(f"Cannot read {file}: {exc.strerror}.") from None
        if errors:
            for number, problem in errors[:ERRORS_SHOWN]:
                self.stderr.write(f"line {number}: {problem}")
            more = len(errors) - ERRORS_SHOWN
            if more > 0:
                self.stderr.write(f"... and {more} more bad lines")
            raise CommandError(f"{len(errors)} bad lines in {file}; nothing was imported.")
        episodes = sum(len(t.episodes) for t in sessions)
        if not episodes:
            raise CommandError(f"No episodes in {file}; nothing was imported.")
        if title is None and len(sessions) == 1 and not sessions[0].title and file != "-":
            title = Path(file).stem
        try:
            created = memory_import(owner=user, sessions=sessions, title=title)
        except ValueError as exc:  # what the checks above cannot see (a date the clock has passed meanwhile)
            raise CommandError(f"{exc}; nothing was imported.") from None
        summaries = sum(len(t.extras.get("summary", [])) for t in sessions)
        for session in created:
            self.stdout.write(f"session {session.uuid} ({session.title or 'untitled'})")
        self.stdout.write(
            self.style.SUCCESS(
                f"Imported {episodes} episodes and {summaries} summaries as {len(created)} "
                f"session{'s' if len(created) != 1 else ''}; summarization was requested."
            )
        )
