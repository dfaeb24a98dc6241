"""Apply the retention settings now: the beat's ``purge_expired``, for
deployments without beat (the embedded default)."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand

from summaries.erasure import expired_sessions_purge, old_revisions_prune


class Command(BaseCommand):
    help = (
        "Delete sessions with no write for SESSION_RETENTION_DAYS and summary revisions older than "
        "SUMMARY_REVISION_RETENTION_DAYS (0 or unset: keep forever), in small batches."
    )

    def handle(self, *args, **options) -> None:
        sessions = expired_sessions_purge(days=settings.SESSION_RETENTION_DAYS)
        revisions = old_revisions_prune(days=settings.SUMMARY_REVISION_RETENTION_DAYS)
        self.stdout.write(
            self.style.SUCCESS(
                f"Purged {sessions.sessions} sessions ({sessions.episodes} episodes, "
                f"{sessions.summaries} summaries) and {revisions} revisions."
            )
        )
