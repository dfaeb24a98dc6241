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
"""

from __future__ import annotations

import enum
import logging
import time
from dataclasses import dataclass, field
from typing import Protocol

from django.conf import settings

from sessions_app.models import ChatSession
from summaries import leases, selectors
from summaries.inference import Completion, InferenceError
from summaries.models import Summary
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


def _call(
    client: Client, prompt: str, *, session_uuid: str, episode_range: str, kind: str
) -> ModelResult:
    """One model call with the summarization settings; a failure is logged
    (the attempt's one record) and raised."""
    started = time.perf_counter()
    try:
        completion = client.complete(
            prompt,
            model=settings.UTILITY_MODEL,
            temperature=settings.SUMMARY_TEMPERATURE,
            max_tokens=settings.SUMMARY_GEN_MAX_TOKENS,
        )
    except InferenceError as exc:
        _log(
            session_uuid,
            episode_range,
            kind=kind,
            outcome="transient_error" if exc.transient else "permanent_error",
            duration_ms=round((time.perf_counter() - started) * 1000),
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
    return result


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
    answer = _call(
        client,
        plan.prompt,
        session_uuid=session_uuid,
        episode_range=plan.episode_range,
        kind=plan.action.value,
    )
    stored, _row = summary_store_pass(plan=plan, result=answer, owner=owner)
    result.stored.append(stored)
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


def _fold_range(
    session_pk: int,
    after_id: int,
    through_id: int,
    client: Client,
    session_uuid: str,
    result: RunResult,
    *,
    owner: str,
    kind: str,
    start_new_rows: bool,
) -> list[RebuiltRow]:
    """Summaries of the episodes in ``(after_id, through_id]`` computed in memory.

    The same policy as a normal run: chunks oldest first within the cap, the
    first chunk of a row with the fresh prompt, later ones as cumulative
    updates; with ``start_new_rows`` a row that reaches SUMMARY_MAX_TOKENS is
    closed and the next chunk starts a new one (a rebuilt chain), otherwise
    everything goes into one text (a regenerated row keeps its range).
    """
    rows: list[RebuiltRow] = []
    current: RebuiltRow | None = None
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
            rows.append(current)
            current = None
        action = Action.CREATE if current is None else Action.UPDATE
        prompt = build_prompt(action, chunk, current.result.text if current else None)
        # A rebuild may take many calls: extend the lease before each one.
        if not leases.hold(session_pk, owner):
            raise _LeaseLost
        result.calls += 1
        answer = _call(
            client,
            prompt,
            session_uuid=session_uuid,
            episode_range=_range(chunk),
            kind=f"{kind}-{action.value}",
        )
        _log(
            session_uuid,
            _range(chunk),
            kind=f"{kind}-{action.value}",
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
        rows.append(current)
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
                kind="regenerate",
                start_new_rows=False,
            )
            if rows:
                new = rows[0]
                stored, _ = summary_store_regenerated(
                    session_pk=session_pk,
                    target=target,
                    result=new.result,
                    truncated_chars=new.truncated_chars,
                    owner=owner,
                    actor_pk=actor_pk,
                )
                result.stored.append(stored)
                if stored is StoreOutcome.LOST_LEASE:
                    result.outcome = RunOutcome.LOST
                    return result
    except _LeaseLost:
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
    try:
        chain = [snapshot(r) for r in Summary.objects.chain(session_pk)]
        through = max((r.last_episode_id for r in chain), default=0)
        new_rows: list[RebuiltRow] = []
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
                    kind="rebuild",
                    start_new_rows=True,
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
                kind="rebuild",
                start_new_rows=True,
            )
        if chain:
            stored = chain_store_rebuilt(
                session_pk=session_pk, read_chain=chain, new_rows=new_rows, owner=owner, actor_pk=actor_pk
            )
            result.stored.append(stored)
            if stored is StoreOutcome.LOST_LEASE:
                result.outcome = RunOutcome.LOST
                return result
    except _LeaseLost:
        result.outcome = RunOutcome.LOST
        return result
    except BaseException as exc:
        leases.mark_failed(session_pk, owner, f"{type(exc).__name__}: {exc}")
        raise
    follow = run_session(session_pk=session_pk, owner=owner, force=True, client=client, claimed=True)
    follow.calls += result.calls
    follow.stored[:0] = result.stored
    return follow

