"""The overall deadline of a chat turn, as the HTTP backends see it.

A read timeout bounds the wait for each piece of an answer, not the answer:
a model that sends a chunk every few seconds could hold a web thread for
many minutes. A chat turn therefore runs its model calls ``within`` a
deadline (``CHAT_TURN_TIMEOUT_SECONDS`` from its start); every request made
meanwhile is given at most the time left, and a stream is stopped between
lines once it has run out.

A context variable rather than an argument: it reaches the HTTP layer
through every backend without widening their interface, and a streamed
turn sets it again around each chunk it reads (the chunks are read later,
while the response is sent).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from summaries.inference.base import TransientInferenceError

_deadline: ContextVar[float | None] = ContextVar("inference_deadline", default=None)


class DeadlineExceeded(TransientInferenceError):
    """The turn's overall deadline passed before the model finished its answer."""


def deadline_after(seconds: float) -> float:
    """The ``time.monotonic()`` reading ``seconds`` from now."""
    return time.monotonic() + seconds


@contextmanager
def within(deadline: float | None) -> Iterator[None]:
    """Run the model calls of the block under ``deadline`` (a ``time.monotonic()`` reading)."""
    token = _deadline.set(deadline)
    try:
        yield
    finally:
        _deadline.reset(token)


def time_left() -> float | None:
    """Seconds until the current deadline (``None``: no deadline); never below 0."""
    deadline = _deadline.get()
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def check_deadline(backend: str) -> None:
    """Raise ``DeadlineExceeded`` once the current deadline has passed."""
    left = time_left()
    if left is not None and left <= 0:
        raise DeadlineExceeded("the chat turn ran past its deadline", backend=backend)


def deadline_passed(*, slack: float = 0.05) -> bool:
    """Whether the deadline has passed, or is within ``slack`` seconds (a
    socket timeout set to the time left may fire a hair before it)."""
    left = time_left()
    return left is not None and left <= slack
