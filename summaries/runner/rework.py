"""What the reworks (a regenerated row, a rebuilt chain) share: claim the
lease, compute and store under it, settle the calls when the lease is lost,
record a failure, then continue as a normal run."""

from __future__ import annotations

from collections.abc import Callable

from summaries import leases
from summaries.runner.calls import Client, _session_uuid, _settle_calls
from summaries.runner.results import RunOutcome, RunResult, _LeaseLost
from summaries.runner.session_run import _claim, run_session
from summaries.services import StoreOutcome

#: Computes and stores a rework: counts its calls on the result, appends the
#: cost record of each to the list, settles them after its store, and returns
#: the store's outcome (None when there was nothing to store). The third
#: argument is the session's uuid, read once for the run's log records.
Rework = Callable[[RunResult, list[int | None], str], StoreOutcome | None]


def rework_then_run(
    *, session_pk: int, owner: str, client: Client | None, force: bool, rework: Rework
) -> RunResult:
    """Run ``rework`` under the session's lease, then a normal run (``force``
    passed on) that keeps the lease and releases it.

    Lock contract as ``run_session``: claims the lease (BUSY when another run
    holds it) and releases it before returning, except when an exception
    escapes, in which case the state is ``failed`` and the lease free. The
    model calls happen outside any transaction. Call outside any transaction.
    """
    if not _claim(session_pk, owner):
        return RunResult(RunOutcome.BUSY)
    result = RunResult(RunOutcome.DONE)
    spent: list[int | None] = []
    session_uuid = _session_uuid(session_pk)
    try:
        stored = rework(result, spent, session_uuid)
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
    follow = run_session(
        session_pk=session_pk,
        owner=owner,
        force=force,
        client=client,
        claimed=True,
        session_uuid=session_uuid,
    )
    follow.calls += result.calls
    follow.stored[:0] = result.stored
    return follow
