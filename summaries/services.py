"""Writes for summarization: the trigger, queued requests, and storing a pass.

The functions people call (views, admin, commands, the signal):

- ``summarization_request``: after the current transaction commits, run the
  cheap gate and enqueue a run only when it can fire.
- ``summary_regenerate`` / ``session_rebuild``: queue explicit work.

The functions the runner calls to store results (``summary_store_pass``,
``summary_store_regenerated``, ``chain_store_rebuilt``) each run one short
transaction that first re-checks the lease and then that the rows the pass
read are unchanged. A stale result is dropped, never stored twice.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from sessions_app.models import ChatSession
from sessions_app.tokens import count_tokens
from summaries import leases, selectors
from summaries.curation import record_revision
from summaries.models import Summary, SummaryRevision
from summaries.policy import Action, PassPlan, RowSnapshot

logger = logging.getLogger("nexus.summarization")

Source = SummaryRevision.Source


# --- triggers ---------------------------------------------------------------


@dataclass(slots=True)
class _AfterCommitTrigger:
    """The on_commit callback; a named object so one transaction registers
    it once per session however many episodes it writes."""

    session_pk: int
    force: bool
    ran: bool = False

    def __call__(self) -> None:
        self.ran = True
        try:
            trigger_now(session_pk=self.session_pk, force=self.force)
        except Exception:  # noqa: BLE001 - an episode write must never fail because of this
            logger.exception(
                "summarization trigger failed",
                extra={"session_pk": self.session_pk, "outcome": "trigger_error"},
            )


def _already_registered(session_pk: int, force: bool) -> bool:
    connection = transaction.get_connection()
    if not connection.in_atomic_block:
        return False
    # run_on_commit holds (savepoint ids, callback, robust) for the open
    # transaction; a rolled-back savepoint removes its entries, so what is
    # found here will really run.
    for entry in getattr(connection, "run_on_commit", ()):
        func = entry[1]
        if (
            isinstance(func, _AfterCommitTrigger)
            and not func.ran
            and func.session_pk == session_pk
            and (func.force or not force)
        ):
            return True
    return False


def summarization_request(*, session_pk: int, force: bool = False) -> None:
    """After the current transaction commits: check the gate and, when it
    fires (or ``force``), mark the session queued and enqueue a run.

    Safe inside a transaction (nothing happens unless it commits) and cheap
    outside one. Adds one query to a write whose gate does not fire; never
    raises, so an episode write cannot fail because of summarization.
    """
    if _already_registered(session_pk, force):
        return
    transaction.on_commit(_AfterCommitTrigger(session_pk, force), robust=True)


def trigger_now(*, session_pk: int, force: bool = False) -> bool:
    """The gate and the enqueue, outside any transaction. True when enqueued."""
    gate = selectors.session_gate(session_pk)
    if gate is None or not (force or gate.fires):
        return False
    if force:
        return queue_run(session_pk=session_pk, force=True)
    if not leases.request_run(session_pk=session_pk, state=gate.state):
        return False
    return enqueue_run(session_pk=session_pk)


def queue_run(*, session_pk: int, force: bool = False) -> bool:
    """Mark the session queued (whatever the gate says) and enqueue a run; as ``enqueue_run``."""
    leases.mark_queued(session_pk)
    return enqueue_run(session_pk=session_pk, force=force)


def enqueue_run(*, session_pk: int, force: bool = False) -> bool:
    """Send ``summarize_session`` to the broker; a broker outage is logged,
    the state goes back to idle (so the sweep finds it later) and False is
    returned. Never raises."""
    from summaries.tasks import summarize_session

    return _send(summarize_session, session_pk, {"session_pk": session_pk, "force": force})


def _send(task: Any, session_pk: int, kwargs: dict[str, Any]) -> bool:
    try:
        # A short publish retry: a broker outage must not hold up a web request.
        task.apply_async(
            kwargs=kwargs,
            retry=True,
            retry_policy={"max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.2},
        )
    except Exception as exc:  # noqa: BLE001 - kombu raises many kinds for an unreachable broker
        logger.warning(
            "summarization enqueue failed",
            extra={
                "session_pk": session_pk,
                "outcome": "enqueue_failed",
                "error": f"{type(exc).__name__}: {exc}",
            },
        )
        leases.enqueue_failed(session_pk)
        return False
    return True


def summary_regenerate(*, summary: Summary, actor: Any = None) -> None:
    """Queue a fresh summary of exactly ``summary``'s range (after commit).

    The row keeps its range; its text is replaced by the model's (the row is
    no longer curated) and the previous state is kept as a revision with
    source ``regenerate``.
    """
    from summaries.tasks import regenerate_summary

    _queue_after_commit(
        regenerate_summary, summary.session_id, {"summary_pk": summary.pk, "actor_pk": _actor_pk(actor)}
    )


def session_rebuild(*, session: ChatSession, actor: Any = None) -> None:
    """Queue a rebuild of the session's chain (after commit): curated rows are
    kept as they are, everything else is folded again so the rows tile the
    session; then the tail is summarized as usual."""
    from summaries.tasks import rebuild_session

    _queue_after_commit(rebuild_session, session.pk, {"session_pk": session.pk, "actor_pk": _actor_pk(actor)})


def _actor_pk(actor: Any) -> int | None:
    return getattr(actor, "pk", None) if actor is not None and actor.is_authenticated else None


def _queue_after_commit(task: Any, session_pk: int, kwargs: dict[str, Any]) -> None:
    """After the current transaction commits: mark the session queued and send ``task``."""

    def send() -> None:
        leases.mark_queued(session_pk)
        _send(task, session_pk, kwargs)

    transaction.on_commit(send, robust=True)


# --- storing results --------------------------------------------------------


class StoreOutcome(enum.Enum):
    CREATED = "created"
    UPDATED = "updated"
    STALE = "stale"  # the rows changed since the pass read them: result dropped
    LOST_LEASE = "lost_lease"  # another run owns the session now: result dropped


@dataclass(frozen=True, slots=True)
class ModelResult:
    """A model's answer and its cost, as stored on a row."""

    text: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    duration_ms: int


def snapshot(row: Summary) -> RowSnapshot:
    return RowSnapshot(
        pk=row.pk,
        content=row.content,
        token_count=row.token_count,
        first_episode_id=row.first_episode_id,
        last_episode_id=row.last_episode_id,
        curated=row.curated,
        updated_at=row.updated_at,
    )


def _unchanged(row: Summary | None, snap: RowSnapshot) -> bool:
    return (
        row is not None
        and not row.curated
        and row.updated_at == snap.updated_at
        and row.first_episode_id == snap.first_episode_id
        and row.last_episode_id == snap.last_episode_id
    )


def summary_store_pass(
    *, plan: PassPlan, result: ModelResult, owner: str
) -> tuple[StoreOutcome, Summary | None]:
    """Store one pass's result in one short transaction.

    Lock order: the session's state row (lease), then the summary row. The
    result is stored only if we still hold the lease, the session's summaries
    still reach exactly ``plan.covered_through``, and (for an update) the
    target row is unchanged and not curated.
    """
    chunk = plan.chunk
    content = result.text.strip()
    with transaction.atomic():
        if not leases.hold(plan.session_pk, owner):
            return StoreOutcome.LOST_LEASE, None
        if selectors.covered_through(plan.session_pk) != plan.covered_through:
            return StoreOutcome.STALE, None
        if plan.action is Action.UPDATE:
            assert plan.target is not None
            row = Summary.objects.select_for_update().filter(pk=plan.target.pk).first()
            if not _unchanged(row, plan.target):
                return StoreOutcome.STALE, None
            record_revision(summary=row, source=Source.AUTOMATIC)
            # The row keeps its first id and moves its last id: rows tile.
            row.last_episode_id = chunk.last_episode_id
            row.truncated_chars += chunk.truncated_chars
            _fill(row, content, result)
            row.save()
            return StoreOutcome.UPDATED, row
        row = Summary(
            session_id=plan.session_pk,
            first_episode_id=chunk.first_episode_id,
            last_episode_id=chunk.last_episode_id,
            truncated_chars=chunk.truncated_chars,
        )
        _fill(row, content, result)
        row.save()
        return StoreOutcome.CREATED, row


def _fill(row: Summary, content: str, result: ModelResult) -> None:
    row.content = content
    row.token_count = count_tokens(content)
    row.model = result.model
    row.prompt_tokens = result.prompt_tokens
    row.completion_tokens = result.completion_tokens
    row.duration_ms = result.duration_ms


def summary_store_regenerated(
    *,
    session_pk: int,
    target: RowSnapshot,
    result: ModelResult,
    truncated_chars: int,
    owner: str,
    actor_pk: int | None,
) -> tuple[StoreOutcome, Summary | None]:
    """Replace a row's text by a regenerated one, keeping its range.

    Stored only if the row is unchanged since it was read (a curated row may
    be regenerated on request: the snapshot carries its curated flag).
    """
    with transaction.atomic():
        if not leases.hold(session_pk, owner):
            return StoreOutcome.LOST_LEASE, None
        row = Summary.objects.select_for_update().filter(pk=target.pk).first()
        if (
            row is None
            or row.updated_at != target.updated_at
            or (row.first_episode_id, row.last_episode_id)
            != (target.first_episode_id, target.last_episode_id)
        ):
            return StoreOutcome.STALE, None
        record_revision(summary=row, source=Source.REGENERATE, actor=_actor(actor_pk))
        row.curated = False
        row.curated_by = None
        row.truncated_chars = truncated_chars
        _fill(row, result.text.strip(), result)
        row.save()
        return StoreOutcome.UPDATED, row


@dataclass(frozen=True, slots=True)
class RebuiltRow:
    first_episode_id: int
    last_episode_id: int
    result: ModelResult
    truncated_chars: int


def chain_store_rebuilt(
    *,
    session_pk: int,
    read_chain: Sequence[RowSnapshot],
    new_rows: Sequence[RebuiltRow],
    owner: str,
    actor_pk: int | None,
) -> StoreOutcome:
    """Swap the non-curated rows of a chain for rebuilt ones, in one transaction.

    Existing rows are reused in order (each keeps a ``regenerate`` revision of
    its old state); leftovers are deleted, missing ones created. Dropped if
    any row of the chain changed since it was read.
    """
    actor = _actor(actor_pk)
    with transaction.atomic():
        if not leases.hold(session_pk, owner):
            return StoreOutcome.LOST_LEASE
        current = list(
            Summary.objects.select_for_update()
            .filter(session_id=session_pk)
            .order_by("first_episode_id", "pk")
        )
        if [(r.pk, r.updated_at) for r in current] != [(s.pk, s.updated_at) for s in read_chain]:
            return StoreOutcome.STALE
        reusable = [r for r in current if not r.curated]
        for row, new in zip(reusable, new_rows):
            record_revision(summary=row, source=Source.REGENERATE, actor=actor)
            row.first_episode_id, row.last_episode_id = new.first_episode_id, new.last_episode_id
            row.truncated_chars = new.truncated_chars
            _fill(row, new.result.text.strip(), new.result)
            row.save()
        for row in reusable[len(new_rows) :]:
            row.delete()
        for new in new_rows[len(reusable) :]:
            row = Summary(
                session_id=session_pk,
                first_episode_id=new.first_episode_id,
                last_episode_id=new.last_episode_id,
                truncated_chars=new.truncated_chars,
            )
            _fill(row, new.result.text.strip(), new.result)
            row.save()
        return StoreOutcome.UPDATED


def _actor(actor_pk: int | None) -> Any:
    if actor_pk is None:
        return None
    from django.contrib.auth import get_user_model

    return get_user_model().objects.filter(pk=actor_pk).first()


# --- the sweep ----------------------------------------------------------------


def sweep_pending(*, synchronous: bool = False, limit: int = 500) -> list[int]:
    """Find sessions with pending work and enqueue them (or, ``synchronous``,
    run them here, one after another). Returns the primary keys of the
    sessions enqueued (or run); a broker outage returns fewer.

    This is what makes a broker outage harmless: writes during the outage
    could not enqueue, but their gate still fires, so the next sweep finds them.
    """
    done: list[int] = []
    for session_pk in selectors.sessions_with_pending_work(limit=limit):
        if synchronous:
            import uuid

            from summaries.runner import run_session

            run_session(session_pk=session_pk, owner=f"sweep-{uuid.uuid4()}")
            done.append(session_pk)
        elif queue_run(session_pk=session_pk):
            done.append(session_pk)
    return done
