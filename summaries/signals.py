"""Signal receivers: they only trigger; the logic lives in summaries.triggers
(and, for the episodes' vectors, in sessions_app.semantic.tasks)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from sessions_app import semantic
from sessions_app.models import Episode
from sessions_app.semantic.tasks import queue_embedding
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
    request_run(session_pk=session_pk)
    if semantic.enabled():
        # A batch always sends the encoding task (a single write's rule is in request_run_now).
        transaction.on_commit(lambda: queue_embedding(session_pk), robust=True)
