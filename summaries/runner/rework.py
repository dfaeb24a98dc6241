"""The reworks: a regenerated row and a rebuilt chain.

Both claim the lease, fold episodes into summaries in memory (chunks oldest
first, one model call each, nothing stored while folding), store the result
in one short transaction (``summaries.store``), settle the calls' cost
records, then continue as a normal run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings

from sessions_app.tokens import count_tokens
from summaries import run_state, selectors
from summaries.inference import Completion, InferenceClient
from summaries.models import Summary, UtilityCall
from summaries.policy import Action, build_chunk, build_prompt
from summaries.runner.calls import (
    CallSpan,
    SessionRefs,
    call_model,
    log_call,
    resolve_client,
    session_refs_of,
    settle_calls,
)
from summaries.runner.session_run import RunOutcome, RunResult, claim_lease, run_session
from summaries.store import (
    RebuiltRow,
    StoreOutcome,
    chain_store_rebuilt,
    snapshot,
    summary_store_regenerated,
)


@dataclass
class _Folded:
    """A row computed in memory and the cost records of the calls behind it."""

    row: RebuiltRow
    call_pks: list[int | None]


@dataclass
class _Rework:
    """One rework under way: the run's result (calls counted, outcomes
    stored), the cost record of every call made, the session's uuid and
    owner (read once), and who asked for it (the calls are charged to them,
    else to the owner)."""

    session_pk: int
    owner: str
    client: InferenceClient | None
    kind: UtilityCall.Kind
    result: RunResult
    refs: SessionRefs
    actor_pk: int | None
    spent: list[int | None]

    def fold(self, after_id: int, through_id: int, *, start_new_rows: bool) -> list[_Folded] | None:
        """Summaries of the episodes in ``(after_id, through_id]``, in memory;
        None when the lease went to another run meanwhile.

        The same policy as a normal run: chunks oldest first within the cap,
        the first chunk of a row with the fresh prompt, later ones as
        cumulative updates; with ``start_new_rows`` a row that reaches
        SUMMARY_MAX_TOKENS is closed and the next chunk starts a new one (a
        rebuilt chain), otherwise everything goes into one text (a
        regenerated row keeps its range).
        """
        rows: list[_Folded] = []
        current: RebuiltRow | None = None
        current_calls: list[int | None] = []
        cursor = after_id
        while cursor < through_id:
            episodes = selectors.tail_for_chunk(
                self.session_pk, after_id=cursor, through_id=through_id, max_chars=settings.SUMMARY_MAX_CHARS
            )
            if not episodes:
                break
            chunk = build_chunk(episodes, max_chars=settings.SUMMARY_MAX_CHARS)
            if (
                current is not None
                and start_new_rows
                and count_tokens(current.result.text.strip()) >= settings.SUMMARY_MAX_TOKENS
            ):
                rows.append(_Folded(current, current_calls))
                current, current_calls = None, []
            action = Action.CREATE if current is None else Action.UPDATE
            prompt = build_prompt(action, chunk, current.result.text if current else None)
            # A rebuild may take many calls: extend the lease before each one.
            if not run_state.hold(self.session_pk, self.owner):
                return None
            self.result.calls += 1
            span = CallSpan(
                session_pk=self.session_pk,
                session_uuid=self.refs.uuid,
                first_episode_id=chunk.first_episode_id,
                last_episode_id=chunk.last_episode_id,
                kind=self.kind,
                log_kind=f"{self.kind.value}-{action.value}",
                # Asked for and admitted under the cap: charged, never held back.
                charged_to=self.actor_pk or self.refs.owner_pk,
            )
            answer = call_model(resolve_client(self.client), prompt, span)
            self.spent.append(answer.call_pk)
            current_calls.append(answer.call_pk)
            log_call(span, kind=span.log_kind, outcome="computed", completion=answer.completion, prompt=prompt)
            if current is None:
                current = RebuiltRow(
                    chunk.first_episode_id, chunk.last_episode_id, answer.completion, chunk.truncated_chars
                )
            else:
                current = RebuiltRow(
                    current.first_episode_id,
                    chunk.last_episode_id,
                    _merge_cost(current.result, answer.completion),
                    current.truncated_chars + chunk.truncated_chars,
                )
            cursor = chunk.last_episode_id
        if current is not None:
            rows.append(_Folded(current, current_calls))
        return rows

    def lease_lost(self) -> StoreOutcome:
        """The lease went while folding: nothing is stored, the answers so far are dropped."""
        settle_calls(self.spent, dropped=True)
        return StoreOutcome.LOST_LEASE


def _merge_cost(previous: Completion, latest: Completion) -> Completion:
    """The latest text with the cost of every call that went into it."""
    return Completion(
        text=latest.text,
        model=latest.model,
        prompt_tokens=previous.prompt_tokens + latest.prompt_tokens,
        completion_tokens=previous.completion_tokens + latest.completion_tokens,
        duration_ms=previous.duration_ms + latest.duration_ms,
    )


def _rework_then_run(
    *,
    session_pk: int,
    owner: str,
    client: InferenceClient | None,
    kind: UtilityCall.Kind,
    force: bool,
    actor_pk: int | None,
    store: Callable[[_Rework], StoreOutcome | None],
) -> RunResult:
    """Compute and store a rework under the session's lease (``store``
    returns the store's outcome, None when there was nothing to store), then
    a normal run (``force`` passed on) that keeps the lease and releases it.

    Lock contract as ``run_session``: claims the lease (BUSY when another run
    holds it) and releases it before returning, except when an exception
    escapes, in which case the state is ``failed`` and the lease free. The
    model calls happen outside any transaction. Call outside any transaction.
    """
    if not claim_lease(session_pk, owner):
        return RunResult(RunOutcome.BUSY)
    work = _Rework(
        session_pk=session_pk,
        owner=owner,
        client=client,
        kind=kind,
        result=RunResult(RunOutcome.DONE),
        refs=session_refs_of(session_pk),
        actor_pk=actor_pk,
        spent=[],
    )
    try:
        if store(work) is StoreOutcome.LOST_LEASE:
            work.result.outcome = RunOutcome.LOST
            return work.result
    except BaseException as exc:
        run_state.mark_failed(session_pk, owner, f"{type(exc).__name__}: {exc}")
        raise
    follow = run_session(
        session_pk=session_pk,
        owner=owner,
        force=force,
        client=client,
        claimed=True,
        refs=work.refs,
        actor_pk=actor_pk,
    )
    follow.calls += work.result.calls
    follow.stored[:0] = work.result.stored
    return follow


def regenerate_row(
    *,
    summary_pk: int,
    owner: str,
    actor_pk: int | None = None,
    client: InferenceClient | None = None,
    replace_curated: bool = False,
) -> RunResult:
    """Summarize exactly one row's range afresh, then continue as a normal run.

    A curated row is replaced only with ``replace_curated``; without it (the
    row was curated after the request) it is left as it is, no model call.
    The store drops the result if the row changes meanwhile. Lock contract
    as ``run_session``.
    """
    session_pk = Summary.objects.filter(pk=summary_pk).values_list("session_id", flat=True).first()
    if session_pk is None:
        return RunResult(RunOutcome.GONE)

    def store(work: _Rework) -> StoreOutcome | None:
        row = Summary.objects.filter(pk=summary_pk).first()
        if row is None or (row.curated and not replace_curated):
            return None
        target = snapshot(row)
        rows = work.fold(target.first_episode_id - 1, target.last_episode_id, start_new_rows=False)
        if rows is None:
            return work.lease_lost()
        if not rows:
            return None
        new = rows[0].row
        stored, regenerated = summary_store_regenerated(
            session_pk=session_pk,
            target=target,
            result=new.result,
            truncated_chars=new.truncated_chars,
            owner=owner,
            actor_pk=actor_pk,
        )
        work.result.stored.append(stored)
        if regenerated is not None:
            settle_calls(work.spent, summary_pk=regenerated.pk)
        else:
            settle_calls(work.spent, dropped=True)
        return stored

    return _rework_then_run(
        session_pk=session_pk,
        owner=owner,
        client=client,
        kind=UtilityCall.Kind.REGENERATE,
        force=False,
        actor_pk=actor_pk,
        store=store,
    )


def rebuild_chain(
    *, session_pk: int, owner: str, actor_pk: int | None = None, client: InferenceClient | None = None
) -> RunResult:
    """Fold the session's covered episodes again around its curated rows,
    then continue as a normal run (forced, so a session without rows gets
    its first summary). Lock contract as ``run_session``."""

    def store(work: _Rework) -> StoreOutcome | None:
        chain = [snapshot(r) for r in Summary.objects.chain(session_pk)]
        through = max((r.last_episode_id for r in chain), default=0)
        # The gaps between curated rows (and after the last) are folded
        # again; the curated rows themselves stay as they are.
        gaps: list[tuple[int, int]] = []
        cursor = 0
        for curated in [r for r in chain if r.curated]:
            if curated.first_episode_id - 1 > cursor:
                gaps.append((cursor, curated.first_episode_id - 1))
            cursor = max(cursor, curated.last_episode_id)
        if through > cursor:
            gaps.append((cursor, through))
        new_rows: list[_Folded] = []
        for after_id, through_id in gaps:
            folded = work.fold(after_id, through_id, start_new_rows=True)
            if folded is None:
                return work.lease_lost()
            new_rows += folded
        if not chain:
            return None
        stored = chain_store_rebuilt(
            session_pk=session_pk,
            read_chain=chain,
            new_rows=[f.row for f in new_rows],
            owner=owner,
            actor_pk=actor_pk,
        )
        work.result.stored.append(stored)
        if stored is StoreOutcome.UPDATED:
            _link_rebuilt(session_pk, new_rows)
        else:
            settle_calls(work.spent, dropped=True)
        return stored

    return _rework_then_run(
        session_pk=session_pk,
        owner=owner,
        client=client,
        kind=UtilityCall.Kind.REBUILD,
        force=True,
        actor_pk=actor_pk,
        store=store,
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
        settle_calls(f.call_pks, summary_pk=by_range.get((f.row.first_episode_id, f.row.last_episode_id)))
