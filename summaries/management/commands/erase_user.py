"""Erase everything a user stored (``summaries.erasure.user_memory_erase``); the account stays."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from summaries.erasure import user_memory_erase


class Command(BaseCommand):
    help = "Erase a user's sessions, episodes, summaries and their revisions; the account and its tokens stay."

    def add_arguments(self, parser):
        parser.add_argument("username")

    def handle(self, *args, username: str, **options) -> None:
        try:
            user = get_user_model().objects.get_by_natural_key(username)
        except get_user_model().DoesNotExist:
            raise CommandError(f"No user {username!r}.") from None
        erased = user_memory_erase(user=user)
        self.stdout.write(
            self.style.SUCCESS(
                f"Erased {username}'s memory: {erased.sessions} sessions, {erased.episodes} episodes, "
                f"{erased.summaries} summaries, {erased.revisions} revisions."
            )
        )
