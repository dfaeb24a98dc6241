"""The task that writes a session's missing vectors, and when to send it."""

from __future__ import annotations

import logging

from celery import shared_task

from nexus.dispatch import dispatch
from sessions_app.semantic import enabled
from sessions_app.semantic.store import embed_pending

logger = logging.getLogger("nexus.semantic")

#: Episodes one task encodes at most before it sends the next for the rest.
RUN_LIMIT = 500


@shared_task(name="sessions_app.semantic.tasks.embed_session", acks_late=True, ignore_result=True)
def embed_session(session_pk: int) -> int:
    written = embed_pending(session_pk, limit=RUN_LIMIT)
    if written >= RUN_LIMIT:
        queue_embedding(session_pk)
    return written


def embedding_due(episode_count: int, *, batch: bool = False) -> bool:
    """Whether a write that left the session with ``episode_count`` episodes
    sends the task: every write does (``batch`` or not). The recent window
    is a share of the context's budget, so an episode can leave it with the
    next write and be one retrieval must find by meaning; the task encodes
    every episode still missing its vectors, so writes close together cost
    one encoding run and the tasks after it find nothing to do."""
    return enabled() and episode_count > 0


def queue_embedding(session_pk: int) -> bool:
    """Send ``embed_session`` for the session (after the response, with no
    broker); False, logged, when the broker cannot be reached: the next
    write sends it again, or the sweep
    (``sessions_app.semantic.backlog``). Never raises."""
    try:
        dispatch(embed_session, {"session_pk": session_pk})
    except Exception as exc:  # noqa: BLE001 - kombu raises many kinds for an unreachable broker
        logger.warning(
            "embedding enqueue failed",
            extra={"session_pk": session_pk, "error": f"{type(exc).__name__}: {exc}"},
        )
        return False
    return True
