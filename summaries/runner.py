"""One summarization run of a session: claim the lease, fold the tail, release.

A pass is always: read (short queries, no transaction) -> model call (no
transaction, no row lock held) -> store (one short transaction that re-checks
the lease and the rows read; see ``services.summary_store_pass``). Nothing is
stored from a failed call; the failure is recorded on the state row and the
error raised for the task to retry or not.

Each model call logs one record on ``nexus.summarization`` with the fields in
``extra``: session, episode_range, prompt_tokens, completion_tokens,
duration_ms, outcome, error (and the prompt/answer text only with
``settings.LOG_CONTENT``).

Each model call, answered or not, is also kept as a ``UtilityCall`` row (the
cost record behind the usage report), written on its own right after the
model returns or raises, outside any transaction; once the answer is stored
the row is linked to its summary, and an answer dropped as stale is marked so.
"""

from __future__ import annotations

import enum
import logging
import time
from dataclasses import dataclass, field
from typing import Protocol

from django.conf import settings
from django.db import DatabaseError

from sessions_app.models import ChatSession
from summaries import leases, selectors
from summaries.inference import Completion, InferenceError
from summaries.models import Summary, UtilityCall
from summaries.policy import Action, Chunk, build_chunk, build_prompt, plan_pass
from summaries.services import (
    ModelResult,
    RebuiltRow,
    StoreOutcome,
    chain_store_rebuilt,
    snapshot,
    summary_store_pass,
    summary_store_regenerated,
)

logger = logging.getLogger("nexus.summarization")

# A run stops after this many calls and leaves the rest to a rerun: a
# runaway loop must not hold a session's lease forever.
MAX_PASSES_PER_RUN = 500


class Client(Protocol):
    def complete(
        self,
        prompt: str,
        *,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> Completion: ...


class RunOutcome(enum.Enum):
    DONE = "done"
    BUSY = "busy"  # another run holds the lease; it was asked to look again
    LOST = "lost"  # the lease was taken over mid-run
    GONE = "gone"  # the session or row no longer exists


@dataclass
class RunResult:
    outcome: RunOutcome
    calls: int = 0
    stored: list[StoreOutcome] = field(default_factory=list)


def _client(client: Client | None) -> Client:
    if client is not None:
        return client
    from summaries.inference import get_client

    return get_client()


@dataclass(frozen=True, slots=True)
class CallSpan:
    """What a model call is about: the session, the episodes in its prompt,
    and the kind of call (for the cost record and the log)."""

    session_pk: int
    session_uuid: str
    first_episode_id: int
    last_episode_id: int
    kind: UtilityCall.Kind
    log_kind: str

    @property
    def episode_range(self) -> str:
        return f"{self.first_episode_id}-{self.last_episode_id}"


def _call(client: Client, prompt: str, span: CallSpan) -> tuple[ModelResult, int | None]:
    """One model call with the summarization settings, and its cost record.

    Returns the answer and the primary key of its ``UtilityCall`` row (None
    if that could not be written); a failure is recorded, logged (the
    attempt's one record) and raised.
    """
    started = time.perf_counter()
    try:
        completion = client.complete(
            prompt,
            model=settings.UTILITY_MODEL,
            temperature=settings.SUMMARY_TEMPERATURE,
            max_tokens=settings.SUMMARY_GEN_MAX_TOKENS,
        )
    except InferenceError as exc:
        duration_ms = round((time.perf_counter() - started) * 1000)
        outcome = (
            UtilityCall.Outcome.TRANSIENT_ERROR if exc.transient else UtilityCall.Outcome.PERMANENT_ERROR
        )
        # A failed call reports no token figures: it is recorded with zeros.
        _record_call(span, outcome=outcome, model=settings.UTILITY_MODEL, duration_ms=duration_ms)
        _log(
            span.session_uuid,
            span.episode_range,
            kind=span.log_kind,
            outcome=outcome.value,
            duration_ms=duration_ms,
            error=str(exc),
            prompt=prompt,
            level=logging.WARNING,
        )
        raise
    result = ModelResult(
        text=completion.text,
        model=completion.model,
        prompt_tokens=completion.prompt_tokens,
        completion_tokens=completion.completion_tokens,
        duration_ms=completion.duration_ms,
    )
    call_pk = _record_call(
        span,
        outcome=UtilityCall.Outcome.OK,
        model=result.model,
        prompt_tokens=result.prompt_tokens,
        completion_tokens=result.completion_tokens,
        duration_ms=result.duration_ms,
    )
    return result, call_pk


def _record_call(
    span: CallSpan,
    *,
    outcome: UtilityCall.Outcome,
    model: str,
    prompt_tokens: int = 0,
    completion_tokens: int = 0,
    duration_ms: int = 0,
) -> int | None:
    """Write one ``UtilityCall`` row, on its own (the runner works outside any
    transaction, so this is one short autocommitted insert, holding no lock
    the lease or a summary row needs). A failure to write it is logged, never
    raised: what the run does next must not depend on the cost record."""
    try:
        call = UtilityCall.objects.create(
            session_id=span.session_pk,
            kind=span.kind,
            model=model[:200],
            prompt_tokens=max(0, prompt_tokens),
            completion_tokens=max(0, completion_tokens),
            duration_ms=max(0, duration_ms),
            outcome=outcome,
            first_episode_id=span.first_episode_id,
            last_episode_id=span.last_episode_id,
        )
    except DatabaseError:
        logger.exception(
            "utility call not recorded",
            extra={"session": span.session_uuid, "episode_range": span.episode_range, "outcome": outcome},
        )
        return None
    return call.pk


def _settle_calls(
    call_pks: list[int | None], *, summary_pk: int | None = None, dropped: bool = False
) -> None:
    """After the store: link the calls to the row their answers went into, or
    mark them dropped (the rows or the lease changed while they ran). One
    short write, outside any transaction; a failure is logged, not raised."""
    pks = [pk for pk in call_pks if pk is not None]
    if not pks:
        return
    changes: dict[str, object] = (
        {"outcome": UtilityCall.Outcome.DROPPED_STALE} if dropped else {"summary_id": summary_pk}
    )
    try:
        UtilityCall.objects.filter(pk__in=pks).update(**changes)
    except DatabaseError:
        logger.exception("utility calls not settled", extra={"outcome": "record_failed"})


def _log(
    session_uuid: str,
    episode_range: str,
    *,
    kind: str,
    outcome: str,
    prompt_tokens: int = 0,
    completion_tokens: int = 0,
    duration_ms: int = 0,
    error: str = "",
    prompt: str | None = None,
    answer: str | None = None,
    level: int = logging.INFO,
) -> None:
    extra: dict[str, object] = {
        "session": session_uuid,
        "episode_range": episode_range,
        "kind": kind,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "duration_ms": duration_ms,
        "outcome": outcome,
        "error": error,
    }
    if settings.LOG_CONTENT:
        extra["prompt"] = prompt
        extra["answer"] = answer
    logger.log(level, "summarization %s %s: %s", kind, episode_range, outcome, extra=extra)


def _session_uuid(session_pk: int) -> str:
    value = ChatSession.objects.filter(pk=session_pk).values_list("uuid", flat=True).first()
    return str(value) if value else ""


def run_session(
    *, session_pk: int, owner: str, force: bool = False, client: Client | None = None, claimed: bool = False
) -> RunResult:
    """Bring a session's summaries up to date, if the gate fires (or ``force``).

    Lock contract: claims the session's lease (unless ``claimed``: the caller
    already holds it) and releases it before returning, except when an
    InferenceError escapes, in which case the state is ``failed`` and the
    lease free. Call outside any transaction.
    """
    if not claimed and not leases.claim(session_pk, owner):
        leases.note_busy(session_pk, owner)
        return RunResult(RunOutcome.BUSY)
    result = RunResult(RunOutcome.DONE)
    session_uuid = _session_uuid(session_pk)
    try:
        while True:
            gate = selectors.gate_for_run(session_pk)
            if gate is None:
                result.outcome = RunOutcome.GONE
                return result
            if result.calls >= MAX_PASSES_PER_RUN:
                return _hand_over(session_pk, owner, result)
            stored: StoreOutcome | None = None
            if force and gate.last_episode_id is not None and gate.covered_through < gate.last_episode_id:
                # Forced (manual request, rebuild): fold everything there is now.
                stored = _one_pass(
                    session_pk, owner, gate.last_episode_id, _client(client), session_uuid, result
                )
            elif gate.fires:
                # One chunk at a time, re-checking the gate after each: a chunk
                # takes as much of the tail as fits the cap, and a remainder
                # under SUMMARY_MIN_EPISODES waits for later writes, so calls
                # are full rather than many small leftovers.
                stored = _one_pass(
                    session_pk, owner, gate.last_episode_id, _client(client), session_uuid, result
                )
            if stored is StoreOutcome.LOST_LEASE:
                result.outcome = RunOutcome.LOST
                return result
            if stored is not None:
                continue
            force = False
            released = leases.release(session_pk, owner)
            if released is leases.Release.DONE:
                return result
            if released is leases.Release.LOST:
                result.outcome = RunOutcome.LOST
                return result
            # RERUN: a trigger arrived while we worked; go round and re-check the gate.
    except BaseException as exc:
        leases.mark_failed(session_pk, owner, f"{type(exc).__name__}: {exc}")
        raise


def _hand_over(session_pk: int, owner: str, result: RunResult) -> RunResult:
    """A run that made MAX_PASSES_PER_RUN calls frees the session and queues a
    fresh task for the rest, so no single task holds a session for hours."""
    from summaries.services import enqueue_run

    while leases.release(session_pk, owner) is leases.Release.RERUN:
        pass
    leases.mark_queued(session_pk)
    enqueue_run(session_pk=session_pk)
    return result


def _one_pass(
    session_pk: int, owner: str, through_id: int | None, client: Client, session_uuid: str, result: RunResult
) -> StoreOutcome | None:
    """Fold the oldest un-summarized chunk (up to ``through_id``) into the
    chain with one model call; None when there is nothing to fold."""
    latest_row = selectors.latest_summary(session_pk)
    covered = latest_row.last_episode_id if latest_row else 0
    if through_id is None or covered >= through_id:
        return None
    episodes = selectors.tail_for_chunk(
        session_pk, after_id=covered, through_id=through_id, max_chars=settings.SUMMARY_MAX_CHARS
    )
    if not episodes:
        return None
    plan = plan_pass(
        session_pk=session_pk,
        latest=snapshot(latest_row) if latest_row else None,
        covered_through=covered,
        episodes=episodes,
        max_tokens=settings.SUMMARY_MAX_TOKENS,
        max_chars=settings.SUMMARY_MAX_CHARS,
    )
    # Extend the lease before a call that may take up to the client timeout.
    if not leases.hold(session_pk, owner):
        return StoreOutcome.LOST_LEASE
    result.calls += 1
    span = CallSpan(
        session_pk=session_pk,
        session_uuid=session_uuid,
        first_episode_id=plan.chunk.first_episode_id,
        last_episode_id=plan.chunk.last_episode_id,
        kind=UtilityCall.Kind.UPDATE if plan.action is Action.UPDATE else UtilityCall.Kind.FRESH,
        log_kind=plan.action.value,
    )
    answer, call_pk = _call(client, plan.prompt, span)
    stored, row = summary_store_pass(plan=plan, result=answer, owner=owner)
    result.stored.append(stored)
    if row is not None:
        _settle_calls([call_pk], summary_pk=row.pk)
    else:
        _settle_calls([call_pk], dropped=True)
    _log(
        session_uuid,
        plan.episode_range,
        kind=plan.action.value,
        outcome=stored.value,
        prompt_tokens=answer.prompt_tokens,
        completion_tokens=answer.completion_tokens,
        duration_ms=answer.duration_ms,
        prompt=plan.prompt,
        answer=answer.text,
    )
    return stored


class _LeaseLost(Exception):
    """The session's lease went to another run while this one computed."""


@dataclass
class _Folded:
    """A row computed in memory and the cost records of the calls behind it."""

    row: RebuiltRow
    call_pks: list[int | None]


def _fold_range(
    session_pk: int,
    after_id: int,
    through_id: int,
    client: Client,
    session_uuid: str,
    result: RunResult,
    *,
    owner: str,
    kind: UtilityCall.Kind,
    start_new_rows: bool,
    spent: list[int | None],
) -> list[_Folded]:
    """Summaries of the episodes in ``(after_id, through_id]`` computed in memory.

    The same policy as a normal run: chunks oldest first within the cap, the
    first chunk of a row with the fresh prompt, later ones as cumulative
    updates; with ``start_new_rows`` a row that reaches SUMMARY_MAX_TOKENS is
    closed and the next chunk starts a new one (a rebuilt chain), otherwise
    everything goes into one text (a regenerated row keeps its range).
    The cost record of every call is appended to ``spent`` as it is made.
    """
    rows: list[_Folded] = []
    current: RebuiltRow | None = None
    current_calls: list[int | None] = []
    cursor = after_id
    while cursor < through_id:
        episodes = selectors.tail_for_chunk(
            session_pk, after_id=cursor, through_id=through_id, max_chars=settings.SUMMARY_MAX_CHARS
        )
        if not episodes:
            break
        chunk = build_chunk(episodes, max_chars=settings.SUMMARY_MAX_CHARS)
        close_current = (
            current is not None and start_new_rows and count_tokens_of(current) >= settings.SUMMARY_MAX_TOKENS
        )
        if current is not None and close_current:
            rows.append(_Folded(current, current_calls))
            current, current_calls = None, []
        action = Action.CREATE if current is None else Action.UPDATE
        prompt = build_prompt(action, chunk, current.result.text if current else None)
        # A rebuild may take many calls: extend the lease before each one.
        if not leases.hold(session_pk, owner):
            raise _LeaseLost
        result.calls += 1
        span = CallSpan(
            session_pk=session_pk,
            session_uuid=session_uuid,
            first_episode_id=chunk.first_episode_id,
            last_episode_id=chunk.last_episode_id,
            kind=kind,
            log_kind=f"{kind.value}-{action.value}",
        )
        answer, call_pk = _call(client, prompt, span)
        spent.append(call_pk)
        current_calls.append(call_pk)
        _log(
            session_uuid,
            _range(chunk),
            kind=span.log_kind,
            outcome="computed",
            prompt_tokens=answer.prompt_tokens,
            completion_tokens=answer.completion_tokens,
            duration_ms=answer.duration_ms,
            prompt=prompt,
            answer=answer.text,
        )
        if current is None:
            current = RebuiltRow(chunk.first_episode_id, chunk.last_episode_id, answer, chunk.truncated_chars)
        else:
            current = RebuiltRow(
                current.first_episode_id,
                chunk.last_episode_id,
                _merge_cost(current.result, answer),
                current.truncated_chars + chunk.truncated_chars,
            )
        cursor = chunk.last_episode_id
    if current is not None:
        rows.append(_Folded(current, current_calls))
    return rows


def count_tokens_of(row: RebuiltRow) -> int:
    from sessions_app.tokens import count_tokens

    return count_tokens(row.result.text.strip())


def _merge_cost(previous: ModelResult, latest: ModelResult) -> ModelResult:
    """The latest text with the cost of every call that went into it."""
    return ModelResult(
        text=latest.text,
        model=latest.model,
        prompt_tokens=previous.prompt_tokens + latest.prompt_tokens,
        completion_tokens=previous.completion_tokens + latest.completion_tokens,
        duration_ms=previous.duration_ms + latest.duration_ms,
    )


def _link_rebuilt(session_pk: int, folded: list[_Folded]) -> None:
    """Link a stored rebuild's calls to the rows they went into. Rows of a
    session tile its episodes, so a range names one row."""
    if not folded:
        return
    by_range = {
        (first, last): pk
        for pk, first, last in Summary.objects.filter(session_id=session_pk).values_list(
            "pk", "first_episode_id", "last_episode_id"
        )
    }
    for f in folded:
        _settle_calls(f.call_pks, summary_pk=by_range.get((f.row.first_episode_id, f.row.last_episode_id)))


def _range(chunk: Chunk) -> str:
    return f"{chunk.first_episode_id}-{chunk.last_episode_id}"


def regenerate_row(
    *, summary_pk: int, owner: str, actor_pk: int | None = None, client: Client | None = None
) -> RunResult:
    """Summarize exactly one row's range afresh, then continue as a normal run.

    Lock contract as ``run_session``.
    """
    session_pk = Summary.objects.filter(pk=summary_pk).values_list("session_id", flat=True).first()
    if session_pk is None:
        return RunResult(RunOutcome.GONE)
    if not leases.claim(session_pk, owner):
        leases.note_busy(session_pk, owner)
        return RunResult(RunOutcome.BUSY)
    result = RunResult(RunOutcome.DONE)
    spent: list[int | None] = []
    try:
        row = Summary.objects.filter(pk=summary_pk).first()
        if row is not None:
            target = snapshot(row)
            rows = _fold_range(
                session_pk,
                target.first_episode_id - 1,
                target.last_episode_id,
                _client(client),
                _session_uuid(session_pk),
                result,
                owner=owner,
                kind=UtilityCall.Kind.REGENERATE,
                start_new_rows=False,
                spent=spent,
            )
            if rows:
                new = rows[0].row
                stored, regenerated = summary_store_regenerated(
                    session_pk=session_pk,
                    target=target,
                    result=new.result,
                    truncated_chars=new.truncated_chars,
                    owner=owner,
                    actor_pk=actor_pk,
                )
                result.stored.append(stored)
                if regenerated is not None:
                    _settle_calls(spent, summary_pk=regenerated.pk)
                else:
                    _settle_calls(spent, dropped=True)
                if stored is StoreOutcome.LOST_LEASE:
                    result.outcome = RunOutcome.LOST
                    return result
    except _LeaseLost:
        _settle_calls(spent, dropped=True)
        result.outcome = RunOutcome.LOST
        return result
    except BaseException as exc:
        leases.mark_failed(session_pk, owner, f"{type(exc).__name__}: {exc}")
        raise
    follow = run_session(session_pk=session_pk, owner=owner, client=client, claimed=True)
    follow.calls += result.calls
    follow.stored[:0] = result.stored
    return follow


def rebuild_chain(
    *, session_pk: int, owner: str, actor_pk: int | None = None, client: Client | None = None
) -> RunResult:
    """Fold the session's covered episodes again around its curated rows,
    then continue as a normal run (forced, so a session without rows gets
    its first summary). Lock contract as ``run_session``."""
    if not leases.claim(session_pk, owner):
        leases.note_busy(session_pk, owner)
        return RunResult(RunOutcome.BUSY)
    result = RunResult(RunOutcome.DONE)
    spent: list[int | None] = []
    try:
        chain = [snapshot(r) for r in Summary.objects.chain(session_pk)]
        through = max((r.last_episode_id for r in chain), default=0)
        new_rows: list[_Folded] = []
        cursor = 0
        uuid = _session_uuid(session_pk)
        cli = _client(client)
        for curated in [r for r in chain if r.curated]:
            if curated.first_episode_id - 1 > cursor:
                new_rows += _fold_range(
                    session_pk,
                    cursor,
                    curated.first_episode_id - 1,
                    cli,
                    uuid,
                    result,
                    owner=owner,
                    kind=UtilityCall.Kind.REBUILD,
                    start_new_rows=True,
                    spent=spent,
                )
            cursor = max(cursor, curated.last_episode_id)
        if through > cursor:
            new_rows += _fold_range(
                session_pk,
                cursor,
                through,
                cli,
                uuid,
                result,
                owner=owner,
                kind=UtilityCall.Kind.REBUILD,
                start_new_rows=True,
                spent=spent,
            )
        if chain:
            stored = chain_store_rebuilt(
                session_pk=session_pk,
                read_chain=chain,
                new_rows=[f.row for f in new_rows],
                owner=owner,
                actor_pk=actor_pk,
            )
            result.stored.append(stored)
            if stored is StoreOutcome.UPDATED:
                _link_rebuilt(session_pk, new_rows)
            else:
                _settle_calls(spent, dropped=True)
            if stored is StoreOutcome.LOST_LEASE:
                result.outcome = RunOutcome.LOST
                return result
    except _LeaseLost:
        _settle_calls(spent, dropped=True)
        result.outcome = RunOutcome.LOST
        return result
    except BaseException as exc:
        leases.mark_failed(session_pk, owner, f"{type(exc).__name__}: {exc}")
        raise
    follow = run_session(session_pk=session_pk, owner=owner, force=True, client=client, claimed=True)
    follow.calls += result.calls
    follow.stored[:0] = result.stored
    return follow
