"""Write everything a user stored as JSON lines (``summaries.transfer``), as ``GET /api/me/export/`` does."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from summaries.transfer import user_export_lines


class Command(BaseCommand):
    help = "Export a user's sessions, episodes and summaries as JSON lines to stdout or --output."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--output", "-o", help="file to write (default: stdout)")

    def handle(self, *args, username: str, output: str | None, **options) -> None:
        try:
            user = get_user_model().objects.get_by_natural_key(username)
        except get_user_model().DoesNotExist:
            raise CommandError(f"No user {username!r}.") from None
        if not output:
            for line in user_export_lines(user=user):
                self.stdout.write(line)
            return
        lines = 0
        with open(output, "w", encoding="utf-8") as fh:
            for line in user_export_lines(user=user):
                fh.write(line + "\n")
                lines += 1
        self.stderr.write(f"Wrote {lines} lines of {username}'s memory to {output}.")
