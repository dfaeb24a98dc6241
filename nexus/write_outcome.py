"""Whether a write that met a database failure may have been stored.

A 503 used to say "nothing was stored" for every database failure. That is
true when the failure came before any write reached the server, or inside a
transaction that then rolled back; it is not when a statement that commits
on its own (autocommit) or the ``COMMIT`` itself was sent and the connection
died before the answer came back: the server may have stored it. The client
cannot tell, so the answer must not pretend to know.

Two ways this module learns it:

- ``writes_watched(request)``: while an unsafe request runs, every statement
  that may change rows marks the request (``write_may_be_stored``).
- ``atomic_write()``: ``transaction.atomic()`` that tells a failure of its own
  ``COMMIT`` (``CommitOutcomeUnknown``) from a failure before it (a rollback:
  nothing stored, and the mark is cleared).

``nexus.failures`` answers a marked request's 503 with ``MAY_BE_STORED``.
Sending the write again with the same ``Idempotency-Key`` settles it: the
stored answer comes back, or the write is made once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import DatabaseError, connection, transaction
from django.http import HttpRequest

#: Statements that may change rows (the fused episode insert opens with ``WITH``).
WRITE_PREFIXES = ("insert", "update", "delete", "with")
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class CommitOutcomeUnknown(DatabaseError):
    """The connection failed while committing: the write may or may not be stored."""


class WriteWatch:
    """Kept on the request as ``write_watch``: one object, so DRF's request
    (which reads unknown attributes from Django's) sees the same mark."""

    __slots__ = ("sent",)

    def __init__(self) -> None:
        self.sent = False


def write_may_be_stored(request: Any) -> bool:
    watch = getattr(request, "write_watch", None)
    return watch is not None and watch.sent


def clear_write_mark(request: Any) -> None:
    watch = getattr(request, "write_watch", None)
    if watch is not None:
        watch.sent = False


@contextmanager
def writes_watched(request: HttpRequest) -> Iterator[None]:
    """Mark ``request`` once a statement that may change rows is sent while the block runs."""
    if request.method not in UNSAFE_METHODS:
        yield
        return
    mark = request.write_watch = WriteWatch()  # type: ignore[attr-defined]

    def watch(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        if sql.lstrip()[:6].lower().startswith(WRITE_PREFIXES):
            mark.sent = True
        return execute(sql, params, many, context)

    with connection.execute_wrapper(watch):
        yield


@contextmanager
def atomic_write(request: Any = None) -> Iterator[None]:
    """``transaction.atomic()``; a failure of its ``COMMIT`` raises ``CommitOutcomeUnknown``.

    Any other database failure inside rolled everything back: ``request``'s
    mark is cleared, so its 503 may say that nothing was stored. Nested in
    another atomic block this is a savepoint, and the outer block decides.
    """
    outermost = not connection.in_atomic_block
    committing = False
    try:
        with transaction.atomic():
            yield
            committing = outermost
    except DatabaseError as exc:
        if committing:
            raise CommitOutcomeUnknown(f"the commit failed: {exc}") from exc
        if outermost:
            clear_write_mark(request)
        raise
