"""Find sessions with pending summarization work, or vectors a lost task left
missing, and enqueue (or run) them: beat's sweep, by hand."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from sessions_app.semantic.backlog import resend_missing
from summaries.tasks import sweep_pending


class Command(BaseCommand):
    help = "Enqueue every session with pending summarization work (the beat sweep, on demand)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--sync",
            action="store_true",
            help="Run the summaries here, one session after another, instead of enqueueing.",
        )
        parser.add_argument(
            "--limit", type=int, default=500, help="At most this many sessions (default 500)."
        )

    def handle(self, *args: Any, sync: bool, limit: int, **options: Any) -> None:
        found = sweep_pending(synchronous=sync, limit=limit)
        verb = "Summarized" if sync else "Enqueued"
        self.stdout.write(f"{verb} {len(found)} session(s) with pending work.")
        encoded = resend_missing(synchronous=sync, limit=limit)
        if encoded:
            verb = "Encoded" if sync else "Enqueued the encoding of"
            self.stdout.write(f"{verb} {len(encoded)} session(s) with episodes missing vectors.")
