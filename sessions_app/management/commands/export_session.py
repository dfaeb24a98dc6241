"""Write one session as JSON lines: a header line, then one line per episode
(format in ``sessions_app.transcripts``)."""

from __future__ import annotations

import uuid

from django.core.management.base import BaseCommand, CommandError

from sessions_app.models import ChatSession
from sessions_app.transcripts import export_lines


class Command(BaseCommand):
    help = "Export a session (by uuid) as JSON lines to stdout or --output."

    def add_arguments(self, parser):
        parser.add_argument("session", help="the session's uuid")
        parser.add_argument("--output", "-o", help="file to write (default: stdout)")

    def handle(self, *args, session: str, output: str | None, **options) -> None:
        try:
            parsed = uuid.UUID(session)
        except ValueError:
            raise CommandError(f"{session!r} is not a session uuid.") from None
        try:
            chat_session = ChatSession.objects.select_related("owner").get(uuid=parsed)
        except ChatSession.DoesNotExist:
            raise CommandError(f"No session {parsed}.") from None
        if output:
            lines = 0
            with open(output, "w", encoding="utf-8") as fh:
                for line in export_lines(chat_session):
                    fh.write(line + "\n")
                    lines += 1
            self.stderr.write(f"Wrote {lines - 1} episodes of session {parsed} to {output}.")
        else:
            for line in export_lines(chat_session):
                self.stdout.write(line)
