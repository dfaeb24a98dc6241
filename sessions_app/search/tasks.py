"""Merging deleted exchanges' words out of the SQLite full-text index, in batches.

Deleting an exchange leaves its terms in FTS5's segments until they are
merged (``purge_deleted_terms``), and a merge rewrites the whole index: a
cost that grows with the index, too much for every deletion. So a deletion
asks for a merge after its commit, and the requests made while one is
queued ride on it: the mark in the shared store says one is queued, and the
task clears it before it merges, so a deletion committed during the merge
queues the next one. Nothing to do on PostgreSQL, where a deleted row takes
its terms with it.
"""

from __future__ import annotations

import contextlib
import logging

from celery import shared_task
from django.core.cache import cache
from django.db import connections, transaction

from nexus.dispatch import dispatch
from sessions_app.search.maintenance import purge_deleted_terms

logger = logging.getLogger("nexus.search")

#: Set while a merge is queued; it expires on its own, so a merge lost with its broker is asked for again.
QUEUED_MARK = "nexus:search:purge-queued"
QUEUED_SECONDS = 600


@shared_task(name="sessions_app.search.tasks.purge_index", acks_late=True, ignore_result=True)
def purge_index(using: str = "default") -> None:
    try:
        cache.delete(QUEUED_MARK)
    except Exception:  # noqa: BLE001 - the store being down must not keep the words in the index
        logger.warning("search purge mark could not be cleared", exc_info=True)
    purge_deleted_terms(using=using)


def _queue(using: str) -> None:
    try:
        if not cache.add(QUEUED_MARK, 1, timeout=QUEUED_SECONDS):
            return  # one is queued and has not started: it merges these words too
    except Exception:  # noqa: BLE001 - without the store every deletion asks for its own merge
        logger.warning("search purge mark unavailable", exc_info=True)
    try:
        dispatch(purge_index, {"using": using})
    except Exception as exc:  # noqa: BLE001 - kombu raises many kinds for an unreachable broker
        logger.warning("search purge enqueue failed", extra={"error": f"{type(exc).__name__}: {exc}"})
        with contextlib.suppress(Exception):
            cache.delete(QUEUED_MARK)


def purge_after_commit(*, using: str = "default") -> None:
    """Ask for the merge once the deleting transaction commits (SQLite only)."""
    if connections[using].vendor == "sqlite":
        transaction.on_commit(lambda: _queue(using), using=using, robust=True)
