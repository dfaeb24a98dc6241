"""Asking for summarization work: the one entry point and its two explicit kinds.

- ``request_run``: after the current transaction commits (inside a request,
  once its response has been sent, unless ``force``), run the cheap gate
  and, when it fires (or ``force``), mark the session queued and send a run.
  The episode write path (the signal), the API's "summarize now" and
  anything else that asks for a run call this.
- ``summary_regenerate`` / ``session_rebuild``: queue explicit work on one
  row or one chain (admin actions, the API), after commit as well.

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

from nexus.after_response import after_response
from sessions_app.models import ChatSession
from summaries import run_state, selectors
from summaries.models import Summary
from summaries.tasks import queue_run, rebuild_session, regenerate_summary, send_task, summarize_session

logger = logging.getLogger("nexus.summarization")


class _AfterCommitRun:
    """The on_commit callback of ``request_run`` for one session."""

    # A class of its own (not a closure) so it can be weakly referenced and
    # holds no reference cycle: it is freed as soon as Django drops it.
    __slots__ = ("__weakref__", "force", "ran", "session_pk")

    def __init__(self, session_pk: int, force: bool) -> None:
        self.session_pk = session_pk
        self.force = force
        self.ran = False

    def __call__(self) -> None:
        self.ran = True
        # A write's check waits until its response has been sent (a 201, a chat
        # reply's [DONE]): the answer does not wait for the gate's query, and a
        # trigger lost to a process dying in between is the sweep's to find.
        # An explicit request (force) is queued before its 202 answers, so a
        # status read right after it finds the session queued.
        if self.force or not after_response(self.run_now):
            self.run_now()

    def run_now(self) -> None:
        try:
            request_run_now(session_pk=self.session_pk, force=self.force)
        except Exception:  # noqa: BLE001 - an episode write must never fail because of this
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


def _pending(session_pk: int, force: bool) -> bool:
    """A callback of this transaction will still check this session: a
    forced one covers any request, an ordinary one only ordinary ones."""
    callbacks = _registered()
    for key in ((session_pk, True),) if force else ((session_pk, True), (session_pk, False)):
        found = callbacks.get(key)
        if found is not None and not found.ran:
            return True
    return False


def request_run(*, session_pk: int, force: bool = False) -> None:
    """After the current transaction commits: check the gate and, when it
    fires (or ``force``), mark the session queued and send a run. Inside a
    request an ordinary check waits until the response has been sent.

    Safe inside a transaction (nothing happens unless it commits) and cheap
    outside one. Adds one query to a write whose gate does not fire; never
    raises, so an episode write cannot fail because of summarization.
    """
    in_transaction = transaction.get_connection().in_atomic_block
    if in_transaction and _pending(session_pk, force):
        return
    callback = _AfterCommitRun(session_pk, force)
    if in_transaction:
        _registered()[(session_pk, force)] = callback
    # Outside a transaction on_commit runs the callback at once.
    transaction.on_commit(callback, robust=True)


def request_run_now(*, session_pk: int, force: bool = False) -> bool:
    """The gate and the send, now; True when a run was sent. Call outside any
    transaction (the worker may start before an open one commits)."""
    gate = selectors.session_gate(session_pk)
    if gate is None or not (force or gate.fires):
        return False
    if force:
        return queue_run(session_pk=session_pk, force=True)
    if not run_state.mark_triggered(session_pk=session_pk, state=gate.state):
        return False
    kwargs = {"session_pk": session_pk, "force": False}
    return send_task(summarize_session, session_pk=session_pk, kwargs=kwargs)


def summary_regenerate(*, summary: Summary, actor: Any = None) -> None:
    """Queue a fresh summary of exactly ``summary``'s range (after commit).

    The row keeps its range; its text is replaced by the model's (the row is
    no longer curated) and the previous state is kept as a revision with
    source ``regenerate``.

    A request for a row whose regeneration is already queued or running is
    coalesced into it (``run_state.mark_regeneration``): one model call.
    """
    session_pk, kwargs = summary.session_id, {"summary_pk": summary.pk, "actor_pk": _actor_pk(actor)}

    def send() -> None:
        if not run_state.mark_regeneration(summary.pk):
            return
        run_state.mark_queued(session_pk)
        if not send_task(regenerate_summary, session_pk=session_pk, kwargs=kwargs):
            run_state.end_regeneration(summary.pk)

    transaction.on_commit(send, robust=True)


def session_rebuild(*, session: ChatSession, actor: Any = None) -> None:
    """Queue a rebuild of the session's chain (after commit): curated rows are
    kept as they are, everything else is folded again so the rows tile the
    session (the old texts kept as ``rebuild`` revisions); then the tail is
    summarized as usual."""
    _queue_after_commit(rebuild_session, session.pk, {"session_pk": session.pk, "actor_pk": _actor_pk(actor)})


def _actor_pk(actor: Any) -> int | None:
    return getattr(actor, "pk", None) if actor is not None and actor.is_authenticated else None


def _queue_after_commit(task: Any, session_pk: int, kwargs: dict[str, Any]) -> None:
    """After the current transaction commits: mark the session queued and send ``task``."""

    def send() -> None:
        run_state.mark_queued(session_pk)
        send_task(task, session_pk=session_pk, kwargs=kwargs)

    transaction.on_commit(send, robust=True)
