"""Rebuild a session's chain: its covered episodes folded again around the
curated rows."""

from __future__ import annotations

from summaries.models import Summary, UtilityCall
from summaries.runner import calls
from summaries.runner.calls import Client, _settle_calls
from summaries.runner.folding import _fold_range, _Folded
from summaries.runner.results import RunResult
from summaries.runner.rework import rework_then_run
from summaries.services import StoreOutcome, chain_store_rebuilt, snapshot


def rebuild_chain(
    *, session_pk: int, owner: str, actor_pk: int | None = None, client: Client | None = None
) -> RunResult:
    """Fold the session's covered episodes again around its curated rows,
    then continue as a normal run (forced, so a session without rows gets
    its first summary). Lock contract as ``run_session``."""

    def rework(result: RunResult, spent: list[int | None], session_uuid: str) -> StoreOutcome | None:
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
        cli = calls._client(client)
        new_rows: list[_Folded] = []
        for after_id, through_id in gaps:
            new_rows += _fold_range(
                session_pk,
                after_id,
                through_id,
                cli,
                session_uuid,
                result,
                owner=owner,
                kind=UtilityCall.Kind.REBUILD,
                start_new_rows=True,
                spent=spent,
            )
        if not chain:
            return None
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
        return stored

    return rework_then_run(session_pk=session_pk, owner=owner, client=client, force=True, rework=rework)


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
