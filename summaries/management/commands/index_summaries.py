"""Write the words and vectors of every summary row that lacks current ones
(``summaries.summary_index.refresh_stale``): once after upgrading, for the
rows written before rows had them."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from summaries.summary_index import refresh_stale


class Command(BaseCommand):
    help = "Write the words and vectors of summary rows that have none or outdated ones."

    def handle(self, *args, **options) -> None:
        written = refresh_stale()
        self.stdout.write(self.style.SUCCESS(f"Indexed {written} summary rows."))
