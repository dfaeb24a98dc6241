"""The normal run: fold the session's un-summarized tail, one pass at a time,
while the gate fires (or everything there is, when forced); and what a run
returns."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from django.conf import settings
from django.utils import timezone

from summaries import model_cap, run_state, selectors
from summaries.inference import InferenceClient
from summaries.models import UtilityCall
from summaries.policy import Action, plan_pass
from summaries.runner.calls import (
    CallSpan,
    SessionRefs,
    call_model,
    log_call,
    resolve_client,
    session_refs_of,
    settle_calls,
)
from summaries.store import StoreOutcome, snapshot, summary_store_pass

# A run stops after this many calls and leaves the rest to a fresh task: a
# runaway loop must not hold a session's lease forever.
MAX_PASSES_PER_RUN = 500


class RunOutcome(enum.Enum):
    DONE = "done"
    BUSY = "busy"  # another run holds the lease; it was asked to look again
    LOST = "lost"  # the lease was taken over mid-run
    GONE = "gone"  # the session or row no longer exists
    # The owner is at UTILITY_CALLS_PER_USER_HOUR: no call was made, the
    # session waits idle with its work pending until the cap allows.
    DEFERRED = "deferred"


@dataclass
class RunResult:
    """What a run did. ``handed_over_pk``: the session's primary key when the
    run stopped at MAX_PASSES_PER_RUN with work left and freed the session;
    whoever started the run queues a fresh task for the rest
    (``summaries.tasks.queue_rest``)."""

    outcome: RunOutcome
    calls: int = 0
    stored: list[StoreOutcome] = field(default_factory=list)
    handed_over_pk: int | None = None


def claim_lease(session_pk: int, owner: str) -> bool:
    """Claim the session's lease; when another run holds it, ask that run to
    look again (it reruns before releasing) and return False."""
    if run_state.claim(session_pk, owner):
        return True
    run_state.note_busy(session_pk, owner)
    return False


def run_session(
    *,
    session_pk: int,
    owner: str,
    force: bool = False,
    client: InferenceClient | None = None,
    claimed: bool = False,
    refs: SessionRefs | None = None,
    actor_pk: int | None = None,
) -> RunResult:
    """Bring a session's summaries up to date, if the gate fires (or ``force``).

    Lock contract: claims the session's lease (unless ``claimed``: the caller
    already holds it) and releases it before returning, except when an
    InferenceError escapes, in which case the state is ``failed`` and the
    lease free. Call outside any transaction. ``client``: see
    ``calls.resolve_client``. ``refs`` are read here unless the caller
    already has them.

    Model calls: the forced passes were asked for, and admitted under the cap,
    by ``actor_pk`` (else the owner) and are charged to them; the passes the
    gate fires are the owner's background work and wait while the owner is at
    the cap (``RunOutcome.DEFERRED``, see ``summaries.model_cap``).
    """
    if not claimed and not claim_lease(session_pk, owner):
        return RunResult(RunOutcome.BUSY)
    result = RunResult(RunOutcome.DONE)
    if refs is None:
        refs = session_refs_of(session_pk)
    try:
        while True:
            gate = selectors.session_gate(session_pk)
            if gate is None:
                result.outcome = RunOutcome.GONE
                return result
            if result.calls >= MAX_PASSES_PER_RUN:
                return _hand_over(session_pk, owner, result)
            stored: StoreOutcome | None = None
            # Forced (manual request, rebuild): fold everything there is now.
            # Otherwise one chunk at a time, re-checking the gate after each: a
            # chunk takes as much of the tail as fits the cap, and a remainder
            # under SUMMARY_MIN_EPISODES waits for later writes, so calls are
            # full rather than many small leftovers.
            forced = (
                force and gate.last_episode_id is not None and gate.covered_through < gate.last_episode_id
            )
            if forced or gate.fires:
                active = resolve_client(client)
                if not forced and _defer_while_capped(session_pk, owner, refs.owner_pk, active):
                    result.outcome = RunOutcome.DEFERRED
                else:
                    payer = (actor_pk or refs.owner_pk) if forced else refs.owner_pk
                    stored = _one_pass(
                        session_pk, owner, gate.last_episode_id, active, refs.uuid, result, charged_to=payer
                    )
            if stored is StoreOutcome.LOST_LEASE:
                result.outcome = RunOutcome.LOST
                return result
            if stored is not None:
                continue
            force = False
            released = run_state.release(session_pk, owner)
            if released is run_state.Release.DONE:
                return result
            if released is run_state.Release.LOST:
                result.outcome = RunOutcome.LOST
                return result
            # RERUN: a trigger arrived while we worked; go round and re-check the gate.
    except BaseException as exc:
        run_state.mark_failed(session_pk, owner, f"{type(exc).__name__}: {exc}")
        raise


def _defer_while_capped(session_pk: int, owner: str, owner_pk: int | None, client: InferenceClient) -> bool:
    """True (and the session marked deferred) when the owner is at the
    model-call cap: the pass is not made. The caller releases the session
    as usual, leaving it idle with its episodes pending; the gate and the
    sweep leave it alone until the cap allows, so a capped session is not
    sent round again and again meanwhile."""
    if not model_cap.counts_against_cap(client):
        return False
    wait = model_cap.model_call_wait(owner_pk)
    if wait is None:
        return False
    run_state.defer(session_pk, owner, until=timezone.now() + wait)
    return True


def _hand_over(session_pk: int, owner: str, result: RunResult) -> RunResult:
    """A run that made MAX_PASSES_PER_RUN calls frees the session; its caller
    queues a fresh task for the rest, so no single task holds a session for
    hours."""
    while run_state.release(session_pk, owner) is run_state.Release.RERUN:
        pass
    result.handed_over_pk = session_pk
    return result


def _one_pass(
    session_pk: int,
    owner: str,
    through_id: int | None,
    client: InferenceClient,
    session_uuid: str,
    result: RunResult,
    *,
    charged_to: int | None,
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
    if not run_state.hold(session_pk, owner):
        return StoreOutcome.LOST_LEASE
    result.calls += 1
    span = CallSpan(
        session_pk=session_pk,
        session_uuid=session_uuid,
        first_episode_id=plan.chunk.first_episode_id,
        last_episode_id=plan.chunk.last_episode_id,
        kind=UtilityCall.Kind.UPDATE if plan.action is Action.UPDATE else UtilityCall.Kind.FRESH,
        log_kind=plan.action.value,
        charged_to=charged_to,
    )
    answer = call_model(client, plan.prompt, span)
    stored, row = summary_store_pass(plan=plan, result=answer.completion, owner=owner)
    result.stored.append(stored)
    if row is not None:
        settle_calls([answer.call_pk], summary_pk=row.pk)
    else:
        settle_calls([answer.call_pk], dropped=True)
    log_call(
        span,
        kind=plan.action.value,
        outcome=stored.value,
        completion=answer.completion,
        prompt=plan.prompt,
    )
    return stored
