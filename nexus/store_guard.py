"""Calls to the shared store (Redis) that an outage of the store cannot turn
into failed requests.

Redis holds what the API only counts or remembers: throttle counts, failed
logins, token generations, queued regenerations. None of it is the record of
anything, so while Redis cannot be reached each use goes on without it, as
decided where it is used (README, "When Redis is down"): throttles and login
limits count nothing (they fail open), tokens are checked against the
database on every request, a revocation is stored in the database alone.

``store_call`` runs one call. A failure is logged once per outage (a warning
on ``nexus.store``, and a line when the store answers again) and raises
``StoreUnavailable``; for ``RETRY_SECONDS`` after it the store is not asked at
all, so a Redis that stops answering (rather than refusing connections)
costs one socket timeout per process and pause, not one per request.

``outages_seen`` counts the outages this process noticed, by a failed call or
by ``connection_lost`` (the mark watch's subscription dropping). What a
process remembered before an outage may have missed a change published
during it, so ``nexus.api.authentication`` trusts a remembered token only
under the count it was read with.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import redis

logger = logging.getLogger("nexus.store")

T = TypeVar("T")

#: After a failed call, the store is left alone for this long.
RETRY_SECONDS = 2.0
#: What an unreachable or failing Redis raises (redis-py wraps socket errors, not always).
STORE_ERRORS: tuple[type[BaseException], ...] = (redis.RedisError, OSError)


class StoreUnavailable(Exception):
    """The shared store could not be reached (or is being left alone after a failure)."""


_lock = threading.Lock()
_down_until = 0.0
_in_outage = False
_outages = 0


def store_call(what: str, call: Callable[[], T]) -> T:
    """``call()``'s result; ``StoreUnavailable`` when the store fails it or is
    being left alone. ``what`` names the use in the outage's log line."""
    if _down_until and time.monotonic() < _down_until:
        raise StoreUnavailable(what)
    try:
        result = call()
    except STORE_ERRORS as exc:
        _failed(what, exc)
        raise StoreUnavailable(what) from exc
    if _in_outage:
        _recovered()
    return result


def outages_seen() -> int:
    return _outages


def connection_lost() -> None:
    """A connection to the store dropped outside ``store_call`` (the mark
    watch's): changes published meanwhile may not have reached this process."""
    global _outages
    with _lock:
        _outages += 1


def _failed(what: str, exc: BaseException) -> None:
    global _down_until, _in_outage, _outages
    with _lock:
        _down_until = time.monotonic() + RETRY_SECONDS
        first = not _in_outage
        _in_outage = True
        _outages += 1
    if first:
        logger.warning(
            "shared store unreachable (%s: %s: %s); until it answers, throttles and login limits count "
            "nothing and tokens are checked against the database",
            what,
            type(exc).__name__,
            exc,
        )


def _recovered() -> None:
    global _down_until, _in_outage
    with _lock:
        if not _in_outage:
            return
        _in_outage = False
        _down_until = 0.0
    logger.warning("shared store answers again")


def reset() -> None:
    """Forget any outage (tests)."""
    global _down_until, _in_outage
    with _lock:
        _down_until = 0.0
        _in_outage = False
