"""The task that writes a session's missing vectors, and when to send it."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

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
    sends the task: a bulk write (``batch``) always does, a single write once
    in ``every()``."""
    return enabled() and episode_count > 0 and (batch or episode_count % every() == 0)


def every() -> int:
    """Single writes between two sends: a session's window's worth
    (CONTEXT_RECENT_EPISODES). The newest episodes are in the context's
    recent window, which retrieval never draws from, so every episode older
    than the window has had its task sent, and a write pays for the publish
    only once in that many."""
    return max(1, settings.CONTEXT_RECENT_EPISODES)


def queue_embedding(session_pk: int) -> bool:
    """Send ``embed_session`` for the session (after the response, with no
    broker); False, logged, when the broker cannot be reached: the next
    write that is due sends it again, or the sweep
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
