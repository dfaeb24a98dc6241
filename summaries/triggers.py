"""Asking for summarization work: the one entry point and its two explicit kinds.

- ``request_run``: after the current transaction commits (inside a request,
  once its response has been sent, unless ``force``), run the cheap gate
  and, when it fires (or ``force``), mark the session queued and send a run.
  The episode write path (the signal), the API's "summarize now" and
  anything else that asks for a run call this.
- ``summary_regenerate`` / ``session_rebuild`` / ``session_summarize_now``:
  queue explicit work on one row, one chain or one session's tail (admin
  actions, the API), after commit as well. These are requests for model
  work: each raises ``ModelCallCapReached`` while its requester is at the
  model-call cap (``summaries.model_cap``), and its calls are charged to
  them. ``request_run`` never raises: an episode write cannot fail because
  of the cap, its summarization waits instead (see ``summaries.runner``).

What happens after commit is ``request_run_now``: also the function to call
where no transaction is open and the answer (sent or not) is wanted.

One transaction registers at most one after-commit check per session, however
many episodes it writes; how that stays right across rollbacks is told in
``_Registered``.
"""

from __future__ import annotations

import logging
import weakref
from dataclasses import dataclass
from typing import Any

from asgiref.local import Local
from django.db import transaction

from nexus.dispatch import after_the_response
from nexus.errors import Unavailable
from nexus.store_guard import StoreUnavailable
from sessions_app.models import ChatSession
from sessions_app.semantic.tasks import embedding_due, queue_embedding
from summaries import run_state, selectors
from summaries.curation import check_replace_curated
from summaries.model_cap import check_model_call_allowed
from summaries.models import Summary
from summaries.note_tasks import queue_note_extraction
from summaries.tasks import queue_run, rebuild_session, regenerate_summary, send_task, summarize_session

logger = logging.getLogger("nexus.summarization")

REGENERATION_UNAVAILABLE = (
    "The regeneration cannot be queued right now (the queue is unreachable); nothing was queued."
)
REGENERATION_RETRY_AFTER_SECONDS = 30


class _AfterCommitRun:
    """The on_commit callback of ``request_run`` for one session."""

    # A class of its own (not a closure) so it can be weakly referenced and
    # holds no reference cycle: it is freed as soon as Django drops it.
    __slots__ = ("__weakref__", "actor_pk", "batch", "embeds", "force", "notes", "ran", "session_pk")

    def __init__(self, session_pk: int, force: bool, actor_pk: int | None, batch: bool) -> None:
        self.session_pk = session_pk
        self.force = force
        self.actor_pk = actor_pk
        self.batch = batch
        # Whether a new exchange may state a note (notes.rules.may_state_note): then the extraction is sent.
        self.notes = False
        # Whether this callback decides on the encoding task (one per session and transaction).
        self.embeds = True
        self.ran = False

    def __call__(self) -> None:
        self.ran = True
        # A write's check waits until its response has been sent (a 201, a chat
        # reply's [DONE]), or goes to the embedded worker: the answer does not
        # wait for the gate's query, and a trigger lost to a process dying in
        # between is the sweep's to find. An explicit request (force) is
        # queued before its 202 answers, so a status read right after it
        # finds the session queued.
        if self.force or not after_the_response(self.run_now):
            self.run_now()

    def run_now(self) -> None:
        try:
            request_run_now(
                session_pk=self.session_pk,
                force=self.force,
                actor_pk=self.actor_pk,
                batch=self.batch,
                notes=self.notes,
                embeds=self.embeds,
            )
        except Exception:
            logger.exception(
                "summarization trigger failed",
                extra={"session_pk": self.session_pk, "outcome": "trigger_error"},
            )


@dataclass
class _Registered:
    """What this thread's open transaction has registered: (session, force)
    -> the callback, held only weakly.

    Django keeps an ``on_commit`` callback until the transaction ends and
    drops it, uncalled, when the savepoint or transaction it was registered
    in rolls back (documented behaviour of ``transaction.on_commit``). The
    callback list is Django's; this record holds weak references to our own
    callbacks only, so when Django drops one, nothing else keeps it alive
    and it leaves this record at once: a write after a rolled-back savepoint
    finds nothing and registers anew. A callback that already ran (on
    commit, or run early by a test helper) is skipped by its ``ran`` flag, so
    the next transaction registers anew as well. Connections are per thread
    (per asyncio context under ASGI), so the record is kept the same way.
    """

    callbacks: weakref.WeakValueDictionary[tuple[int, bool], _AfterCommitRun]


_local = Local()


def _registered() -> weakref.WeakValueDictionary[tuple[int, bool], _AfterCommitRun]:
    record = getattr(_local, "record", None)
    if record is None:
        record = _local.record = _Registered(weakref.WeakValueDictionary())
    return record.callbacks


def _pending(session_pk: int, force: bool) -> _AfterCommitRun | None:
    """The callback of this transaction that will still check this session:
    a forced one covers any request, an ordinary one only ordinary ones."""
    callbacks = _registered()
    for key in ((session_pk, True),) if force else ((session_pk, True), (session_pk, False)):
        found = callbacks.get(key)
        if found is not None and not found.ran:
            return found
    return None


def request_run(
    *,
    session_pk: int,
    force: bool = False,
    actor_pk: int | None = None,
    batch: bool = False,
    notes: bool = False,
) -> None:
    """After the current transaction commits: check the gate and, when it
    fires (or ``force``), mark the session queued and send a run. Inside a
    request an ordinary check waits until the response has been sent.

    Safe inside a transaction (nothing happens unless it commits) and cheap
    outside one. Adds one query to a write whose gate does not fire; never
    raises, so an episode write cannot fail because of summarization.
    ``actor_pk``: who asked for a forced run (its calls are charged to them).
    ``batch``: a bulk write asks, whose new episodes' vectors are due
    whatever the count (``request_run_now``). ``notes``: a new exchange may
    state a note, so the note extraction is sent too.
    """
    in_transaction = transaction.get_connection().in_atomic_block
    pending = _pending(session_pk, force) if in_transaction else None
    if pending is not None:
        pending.batch = pending.batch or batch
        pending.notes = pending.notes or notes
        return
    callback = _AfterCommitRun(session_pk, force, actor_pk, batch)
    callback.notes = notes
    if in_transaction:
        # A forced request after an ordinary one still runs, but the ordinary
        # one keeps the encoding task, so a transaction sends it once.
        ordinary = _pending(session_pk, False) if force else None
        if ordinary is not None:
            ordinary.batch = ordinary.batch or batch
            ordinary.notes = ordinary.notes or notes
            callback.embeds = callback.notes = False
        _registered()[(session_pk, force)] = callback
    # Outside a transaction on_commit runs the callback at once.
    transaction.on_commit(callback, robust=True)


def request_run_now(
    *,
    session_pk: int,
    force: bool = False,
    actor_pk: int | None = None,
    batch: bool = False,
    embeds: bool = True,
    notes: bool = False,
) -> bool:
    """The gate and the send, now; True when a run was sent. Call outside any
    transaction (the worker may start before an open one commits). A session
    deferred by the model-call cap is not sent before the cap allows.

    Also the one place that sends the encoding task for new episodes: after
    every write, bulk (``batch``) or single (``embedding_due``), once per
    write; not at all with ``embeds=False`` (another check of the same
    transaction decides)."""
    gate = selectors.session_gate(session_pk)
    if gate is None:
        return False
    # Whether vectors are written at all: no query of its own.
    if embeds and embedding_due(gate.episode_count, batch=batch):
        queue_embedding(session_pk)
    if notes:  # what the user said may state a note (decided at the write, without a query)
        queue_note_extraction(session_pk)
    if not (force or (gate.fires and not gate.deferred)):
        return False
    if force:
        return queue_run(session_pk=session_pk, force=True, actor_pk=actor_pk)
    if not run_state.mark_triggered(session_pk=session_pk, state=gate.state):
        return False
    kwargs = {"session_pk": session_pk, "force": False}
    return send_task(summarize_session, session_pk=session_pk, kwargs=kwargs)


def summary_regenerate(*, summary: Summary, actor: Any = None, replace_curated: bool = False) -> None:
    """Queue a fresh summary of exactly ``summary``'s range (after commit).

    The row keeps its range; its text is replaced by the model's (the row is
    no longer curated) and the previous state is kept as a revision with
    source ``regenerate``.

    A curated row's text is a person's: ``CurationNotConfirmed`` (nothing
    queued) unless ``replace_curated`` says to replace it; the row then says
    it did (``replaced_curation``). The confirmation covers the curation the
    requester saw: a row curated only after the request is left as it is
    when the task comes to it.

    A request for a row whose regeneration is already queued or running is
    coalesced into it (``run_state.mark_regeneration``): one model call.
    ``ModelCallCapReached`` (nothing queued) while ``actor`` is at the cap.
    ``Unavailable`` when, outside a transaction, the regeneration could be
    neither marked (the shared store is down) nor sent (the broker is): the
    sweep never regenerates a row, so a 202 would promise work that no one does.
    """
    check_replace_curated(summary=summary, replace_curated=replace_curated)
    check_model_call_allowed(user=actor)
    replace = summary.curated  # confirmed, or the check above raised
    session_pk, kwargs = summary.session_id, {"summary_pk": summary.pk, "actor_pk": _actor_pk(actor)}
    if replace:
        kwargs["replace_curated"] = True

    unsent: list[bool] = []

    def send() -> None:
        try:
            if not run_state.mark_regeneration(summary.pk, replace_curated=replace):
                return
        except StoreUnavailable:
            unsent.append(True)
            return
        run_state.mark_queued(session_pk)
        if not send_task(regenerate_summary, session_pk=session_pk, kwargs=kwargs):
            run_state.end_regeneration(summary.pk, replace_curated=replace)
            unsent.append(True)

    transaction.on_commit(send, robust=True)
    if unsent:  # sent at once (no transaction open) and it could not be: say so
        raise Unavailable(REGENERATION_UNAVAILABLE, retry_after=REGENERATION_RETRY_AFTER_SECONDS)


def session_rebuild(*, session: ChatSession, actor: Any = None) -> None:
    """Queue a rebuild of the session's chain (after commit): curated rows are
    kept as they are, everything else is folded again so the rows tile the
    session (the old texts kept as ``rebuild`` revisions); then the tail is
    summarized as usual. ``ModelCallCapReached`` (nothing queued) while
    ``actor`` is at the cap."""
    check_model_call_allowed(user=actor)
    _queue_after_commit(rebuild_session, session.pk, {"session_pk": session.pk, "actor_pk": _actor_pk(actor)})


def session_summarize_now(*, session: ChatSession, actor: Any) -> None:
    """Summarize the session's un-summarized episodes now, past the gate
    (after commit). ``ModelCallCapReached`` (nothing queued) while ``actor``
    is at the cap."""
    check_model_call_allowed(user=actor)
    request_run(session_pk=session.pk, force=True, actor_pk=_actor_pk(actor))


def _actor_pk(actor: Any) -> int | None:
    return getattr(actor, "pk", None) if actor is not None and actor.is_authenticated else None


def _queue_after_commit(task: Any, session_pk: int, kwargs: dict[str, Any]) -> None:
    """After the current transaction commits: mark the session queued and send ``task``."""

    def send() -> None:
        run_state.mark_queued(session_pk)
        send_task(task, session_pk=session_pk, kwargs=kwargs)

    transaction.on_commit(send, robust=True)
