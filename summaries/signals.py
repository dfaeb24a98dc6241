"""Signal receivers: they only trigger; the logic lives in summaries.triggers
(which also sends the task that writes the episodes' vectors)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from sessions_app.models import Episode
from summaries.forgetting import exchanges_deleted
from summaries.summary_index import queue_refresh
from summaries.triggers import request_run


def episode_saved(
    sender: type[Episode], instance: Episode, created: bool, raw: bool = False, **kwargs: Any
) -> None:
    """A new episode may make its session due for a summary.

    Fixture loading (``raw``) and edits trigger nothing. No query here: the
    gate runs after commit, once per session per transaction.
    """
    if raw or not created:
        return
    request_run(session_pk=instance.session_id)


def episodes_bulk_created_received(sender: type, session_pk: int, **kwargs: Any) -> None:
    """A bulk write (``sessions_app.signals.episodes_bulk_created``) may make
    its session due for a summary: one request for the whole batch, checked
    after commit like a single write's."""
    # The same check sends the encoding task for the batch's vectors (request_run_now).
    request_run(session_pk=session_pk, batch=True)


def summary_saved(sender: type, instance: Any, created: bool, raw: bool = False, **kwargs: Any) -> None:
    """A summary row written (created, regenerated, edited, restored): its
    words and vectors are written again after commit (``summaries.summary_index``)."""
    if raw:
        return
    pk = instance.pk
    transaction.on_commit(lambda: queue_refresh(pk))


def episodes_deleted_received(sender: type, session_pk: int, episodes: list | None, **kwargs: Any) -> None:
    """Exchanges were deleted (``sessions_app.signals.episodes_deleted``):
    what the summaries said of them goes in the same transaction."""
    exchanges_deleted(session_pk=session_pk, episodes=episodes)
