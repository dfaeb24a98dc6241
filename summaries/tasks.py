"""Celery tasks: thin wrappers that take primary keys and call the runner;
sending them (``send_task``, ``queue_run``); and the sweep that finds
sessions with pending work (summaries, and vectors a lost task left missing).

``acks_late`` (with the project's ``reject_on_worker_lost``) means a task
whose worker child dies is delivered again with the same task id; the
runner's lease lets that same id take over at once, and its idempotent,
optimistic writes make the repeat harmless. Transient model errors are
retried with exponential backoff and jitter; permanent ones are not.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

from celery import Task, shared_task
from django.conf import settings

from nexus.dispatch import dispatch
from sessions_app.idempotency import idempotency_keys_purge
from sessions_app.semantic.backlog import resend_missing
from summaries import run_state, runner, selectors
from summaries.erasure import expired_sessions_purge, old_revisions_prune
from summaries.inference import PermanentInferenceError, TransientInferenceError
from summaries.note_tasks import extract_session_notes  # noqa: F401  (registered for the worker)
from summaries.summary_index import refresh_index  # noqa: F401  (registered for the worker)

logger = logging.getLogger("nexus.summarization")

_RETRYING = {
    "acks_late": True,
    "autoretry_for": (TransientInferenceError,),
    "retry_backoff": True,
    "retry_backoff_max": settings.SUMMARY_RETRY_BACKOFF_MAX,
    "retry_jitter": True,
    "max_retries": settings.SUMMARY_MAX_RETRIES,
}


def _owner(task: Task) -> str:
    # The task id survives redelivery and retries, so it names the lease holder.
    return task.request.id or f"local-{uuid.uuid4()}"


def _eager_safe(task: Task, call: Callable[[], runner.RunResult]) -> runner.RunResult | None:
    """Run ``call`` and queue what a handed-over run left. A permanent model error is already recorded on the state
    row and logged by the runner: retrying cannot help, so the task ends
    quietly. In eager mode (no broker) a transient failure is not retried
    in-process either, where the backoff would block the web request that
    triggered it; the sweep (or the next write) tries again later."""
    try:
        result = call()
    except PermanentInferenceError:
        return None
    except TransientInferenceError:
        if not task.request.is_eager:
            raise  # autoretry_for: backoff with jitter, up to max_retries
        logger.info("transient failure in eager mode; left for the sweep", exc_info=True)
        return None
    queue_rest(result)
    return result


def _finish(
    task: Task, result: runner.RunResult | None, *, countdown: int, max_retries: int, retry_busy: bool = True
) -> str | None:
    """The task's return value; when another run held the session (and
    ``retry_busy``), try again after ``countdown`` seconds instead (not in
    eager mode, where that would block the caller)."""
    if retry_busy and result and result.outcome is runner.RunOutcome.BUSY and not task.request.is_eager:
        raise task.retry(countdown=countdown, max_retries=max_retries)
    return result.outcome.value if result else None


@shared_task(bind=True, name="summaries.tasks.summarize_session", **_RETRYING)
def summarize_session(
    self: Task, session_pk: int, force: bool = False, actor_pk: int | None = None
) -> str | None:
    """Bring one session's summaries up to date; a no-op when another run holds it.

    The holder is asked to re-check the gate, which covers ordinary triggers;
    a forced request (someone asked for a summary now, below the gate) would
    be lost that way, so it tries again shortly instead. ``actor_pk``: who
    asked for the forced run. A run deferred by the model-call cap ends
    here, without a retry: the sweep finds the session once the cap allows.
    """
    result = _eager_safe(
        self,
        lambda: runner.run_session(session_pk=session_pk, owner=_owner(self), force=force, actor_pk=actor_pk),
    )
    return _finish(self, result, countdown=2, max_retries=150, retry_busy=force)


@shared_task(bind=True, name="summaries.tasks.regenerate_summary", **_RETRYING)
def regenerate_summary(
    self: Task, summary_pk: int, actor_pk: int | None = None, replace_curated: bool = False
) -> str | None:
    """Re-summarize exactly one row's range (a curated row only with
    ``replace_curated``). When the session is busy, try again shortly; the
    row stays marked (requests for it coalesce) until the task ends."""
    result = _eager_safe(
        self,
        lambda: runner.regenerate_row(
            summary_pk=summary_pk, owner=_owner(self), actor_pk=actor_pk, replace_curated=replace_curated
        ),
    )
    outcome = _finish(self, result, countdown=5, max_retries=60)
    run_state.end_regeneration(summary_pk, replace_curated=replace_curated)
    return outcome


@shared_task(bind=True, name="summaries.tasks.rebuild_session", **_RETRYING)
def rebuild_session(self: Task, session_pk: int, actor_pk: int | None = None) -> str | None:
    """Rebuild one session's chain around its curated rows. When busy, try again shortly."""
    result = _eager_safe(
        self, lambda: runner.rebuild_chain(session_pk=session_pk, owner=_owner(self), actor_pk=actor_pk)
    )
    return _finish(self, result, countdown=5, max_retries=60)


@shared_task(name="summaries.tasks.sweep_pending_summaries", acks_late=True)
def sweep_pending_summaries() -> int:
    """Enqueue every session with pending work: its summaries, or vectors a
    lost task left missing (beat runs this; without a broker, the embedded
    worker). The number of sends."""
    return len(sweep_pending()) + len(resend_missing())


# --- sending ------------------------------------------------------------------


def send_task(task: Any, *, session_pk: int, kwargs: dict[str, Any]) -> bool:
    """Send ``task`` to the broker now; True when sent.

    A broker outage is logged, the session's state goes back to idle (so the
    sweep finds it later) and False is returned. Never raises. Call after
    commit: the worker may start before an open transaction commits.
    """
    try:
        dispatch(task, kwargs)
    except Exception as exc:  # noqa: BLE001 - kombu raises many kinds for an unreachable broker
        logger.warning(
            "summarization enqueue failed",
            extra={
                "session_pk": session_pk,
                "outcome": "enqueue_failed",
                "error": f"{type(exc).__name__}: {exc}",
            },
        )
        run_state.mark_unsent(session_pk)
        return False
    return True


def queue_run(*, session_pk: int, force: bool = False, actor_pk: int | None = None) -> bool:
    """Mark the session queued (whatever the gate says) and send a
    ``summarize_session`` task for it now; as ``send_task``."""
    run_state.mark_queued(session_pk)
    kwargs: dict[str, Any] = {"session_pk": session_pk, "force": force}
    if actor_pk is not None:
        kwargs["actor_pk"] = actor_pk
    return send_task(summarize_session, session_pk=session_pk, kwargs=kwargs)


def queue_rest(result: runner.RunResult | None) -> None:
    """Queue a fresh task for what a handed-over run left (see ``RunResult``)."""
    if result is not None and result.handed_over_pk is not None:
        queue_run(session_pk=result.handed_over_pk)


# --- the sweep ------------------------------------------------------------------


def sweep_pending(*, synchronous: bool = False, limit: int = 500) -> list[int]:
    """Find sessions with pending work and queue them (or, ``synchronous``,
    run them here, one after another). Returns the primary keys of the
    sessions queued (or run); a broker outage returns fewer.

    This is what makes a broker outage harmless: writes during the outage
    could not send their task, but their gate still fires, so the next sweep
    finds them.
    """
    done: list[int] = []
    for session_pk in selectors.sessions_with_pending_work(limit=limit):
        if synchronous:
            queue_rest(runner.run_session(session_pk=session_pk, owner=f"sweep-{uuid.uuid4()}"))
            done.append(session_pk)
        elif queue_run(session_pk=session_pk):
            done.append(session_pk)
    return done


@shared_task(name="summaries.tasks.purge_expired", acks_late=True)
def purge_expired() -> dict[str, int]:
    """The retention purge (the beat schedule runs this; ``manage.py purge_expired`` too)."""
    sessions = expired_sessions_purge(days=settings.SESSION_RETENTION_DAYS)
    revisions = old_revisions_prune(days=settings.SUMMARY_REVISION_RETENTION_DAYS)
    idempotency_keys_purge()  # past IDEMPOTENCY_KEY_TTL_SECONDS, whatever the retention
    return {"sessions": sessions.sessions, "revisions": revisions}
