"""Regenerate one summary row: its exact range summarized afresh."""

from __future__ import annotations

from summaries.models import Summary, UtilityCall
from summaries.runner import calls
from summaries.runner.calls import Client, _settle_calls
from summaries.runner.folding import _fold_range
from summaries.runner.results import RunOutcome, RunResult
from summaries.runner.rework import rework_then_run
from summaries.services import StoreOutcome, snapshot, summary_store_regenerated


def regenerate_row(
    *, summary_pk: int, owner: str, actor_pk: int | None = None, client: Client | None = None
) -> RunResult:
    """Summarize exactly one row's range afresh, then continue as a normal run.

    Lock contract as ``run_session``.
    """
    session_pk = Summary.objects.filter(pk=summary_pk).values_list("session_id", flat=True).first()
    if session_pk is None:
        return RunResult(RunOutcome.GONE)

    def rework(result: RunResult, spent: list[int | None], session_uuid: str) -> StoreOutcome | None:
        row = Summary.objects.filter(pk=summary_pk).first()
        if row is None:
            return None
        target = snapshot(row)
        rows = _fold_range(
            session_pk,
            target.first_episode_id - 1,
            target.last_episode_id,
            calls._client(client),
            session_uuid,
            result,
            owner=owner,
            kind=UtilityCall.Kind.REGENERATE,
            start_new_rows=False,
            spent=spent,
        )
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
        result.stored.append(stored)
        if regenerated is not None:
            _settle_calls(spent, summary_pk=regenerated.pk)
        else:
            _settle_calls(spent, dropped=True)
        return stored

    return rework_then_run(session_pk=session_pk, owner=owner, client=client, force=False, rework=rework)
