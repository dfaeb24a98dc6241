"""Compare every session's counters with the aggregate over its episodes.

The counters on the session row (episode count, token total, newest
episode) are what every read uses; the write path keeps them in the same
transaction as the insert. This is the check that they still agree, e.g.
after rows were changed by hand in the database. It exits non-zero when a
session disagrees; ``--fix`` sets the counters to the aggregate.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db.models import F, Q

from sessions_app.models import ChatSession
from sessions_app.services import session_counters_repair


class Command(BaseCommand):
    help = "Check (and with --fix repair) the session counters against the episodes."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--fix", action="store_true", help="set drifted counters to the aggregate")

    def handle(self, *args: Any, fix: bool = False, **options: Any) -> None:
        drifted = ChatSession.objects.with_aggregate_stats().exclude(
            Q(cached_episode_count=F("episode_count"))
            & Q(cached_total_tokens=F("total_tokens"))
            & (
                Q(cached_last_episode_id=F("last_episode_id"))
                | Q(cached_last_episode_id__isnull=True, last_episode_id__isnull=True)
            )
        )
        found = 0
        for session in drifted.iterator():
            found += 1
            self.stdout.write(
                f"{session.uuid}: counters {session.cached_episode_count} episodes, "
                f"{session.cached_total_tokens} tokens, newest {session.cached_last_episode_id}; "
                f"episodes say {session.episode_count}, {session.total_tokens}, {session.last_episode_id}"
            )
            if fix:
                session_counters_repair(session_pk=session.pk)
        if found and not fix:
            raise CommandError(f"{found} session(s) with counters that differ from their episodes.")
        self.stdout.write(f"{found} session(s) {'repaired' if fix else 'differ'}.")
