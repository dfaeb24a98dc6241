"""Cheap work a request asks for, run once its response has been sent.

A write's summarization check (one query, and a publish when it fires) need
not delay the write's answer. ``after_response`` keeps such work for the end
of the request: Django's ``request_started`` opens the list, and its
``request_finished`` (sent when the server closes the response, after its
last byte) runs it, in the same thread. Background work proper (a
summarization pass, encoding) never runs here: it goes to the broker or to
the embedded worker (``nexus.embedded_worker``). Signals rather than a
middleware: the list costs the view no stack frames. Outside a request the
caller runs the work at once.

``wait_idle`` waits until every request the process has started is over,
its kept work included: the client has its answer before that work runs,
so whoever shares the process's database with the server (the test suite's
live server on SQLite) waits there before touching the database again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from django.core.signals import request_finished, request_started

logger = logging.getLogger("nexus.after_response")

_pending: ContextVar[list[Callable[[], Any]] | None] = ContextVar("nexus_after_response", default=None)

# Requests started and not yet over (their kept work run), across the process's threads.
_open_requests = 0
_idle = threading.Condition()


def after_response(work: Callable[[], Any]) -> bool:
    """Keep ``work`` for when the current response has been sent; False
    outside a request (the caller then runs it itself)."""
    pending = _pending.get()
    if pending is None:
        return False
    pending.append(work)
    return True


def forget() -> None:
    """Drop what is kept for a response that was never closed (a caller that
    drove the handler by hand): the next request opens a list of its own anyway."""
    if _pending.get() is not None:
        _pending.set(None)
        _request_over()


def wait_idle(timeout: float) -> bool:
    """Wait until no request of this process is running or has kept work
    still to run; False on timeout."""
    with _idle:
        return _idle.wait_for(lambda: _open_requests == 0, timeout)


def _open(**kwargs: Any) -> None:
    global _open_requests
    # A list still open here belonged to a response never closed: this request takes its place.
    if _pending.get() is None:
        with _idle:
            _open_requests += 1
    _pending.set([])


def _request_over() -> None:
    global _open_requests
    with _idle:
        _open_requests -= 1
        _idle.notify_all()


def _run_pending(**kwargs: Any) -> None:
    pending = _pending.get()
    if pending is None:
        return  # a close with no request opened in this context (a response made by hand)
    _pending.set(None)
    try:
        for work in pending:
            try:
                work()
            except Exception:  # noqa: BLE001 - the response is gone; what failed is logged, the next one runs
                logger.exception("work after the response failed")
    finally:
        _request_over()


request_started.connect(_open, dispatch_uid="nexus.after_response.open")
request_finished.connect(_run_pending, dispatch_uid="nexus.after_response")
