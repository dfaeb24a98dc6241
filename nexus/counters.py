"""Counters in the shared store that cost one round trip (marks: ``nexus.marks``).

A throttle counts every API request. Django's cache API gives no atomic
"add one, creating the key with an expiry": on Redis ``incr`` first asks
whether the key exists (a round trip of its own) and a new window needs an
``add`` too. On Redis this sends INCR and EXPIRE NX in one pipeline instead,
through redis-py's documented client. Where the store is the database
(``CACHE_URL=db://``, the default without Redis) a count is one upsert on
``nexus_counter`` (``nexus.shared_store``) that returns the new value, atomic
across processes on SQLite and PostgreSQL alike. Local memory
(``locmem://``) keeps to the cache API.
"""

from __future__ import annotations

import itertools
import threading
import time
from functools import lru_cache

import redis
from django.conf import settings
from django.core.cache import cache
from django.db import connection

from nexus.store_guard import store_call


def store_client() -> redis.Redis | None:
    """redis-py's client of the shared cache's server (None when the cache is not Redis).

    Django's Redis cache builds a new client object on every call, which on
    the API's hot path costs more than a round trip itself."""
    config = settings.CACHES["default"]
    if not config["BACKEND"].endswith(".RedisCache"):
        return None
    return _client_for(config["LOCATION"], tuple(sorted(config.get("OPTIONS", {}).items())))


def store_is_database() -> bool:
    """Whether the shared store is the database (``CACHE_URL=db://``)."""
    return settings.CACHES["default"]["BACKEND"].endswith(".DatabaseCache")


@lru_cache(maxsize=4)
def _client_for(location: str, options: tuple[tuple[str, object], ...]) -> redis.Redis:
    # One client (and pool) per server; redis-py's pool notices a fork and reconnects in the child.
    return redis.Redis.from_url(location, **dict(options))


def count_in_window(key: str, timeout: int, *, batch: int = 1) -> int:
    """Add one to the counter ``key`` (which expires ``timeout`` seconds
    after its first count) and return its new value, atomically.

    With ``batch`` > 1 a process takes that many numbers at once and hands
    them out from memory: one round trip per ``batch`` requests. The count
    is then exact for the store and at most ``batch`` ahead per process, so
    a limit is never exceeded, only reached a little early; for a high rate
    (a signed-in client's) that trade is what keeps the store off every request.

    ``StoreUnavailable`` while the store cannot be reached: the caller decides
    what a count it cannot have means.
    """
    if batch > 1:
        return _count_from_lease(key, timeout, batch)
    return _add(key, 1, timeout)


# key -> [next number to hand out, last number this process holds]
_leases: dict[str, list[int]] = {}
_leases_lock = threading.Lock()
MAX_LEASES = 10_000


def forget_leases() -> None:
    """Drop the numbers this process holds (they count as used in the store)."""
    with _leases_lock:
        _leases.clear()


def _count_from_lease(key: str, timeout: int, batch: int) -> int:
    with _leases_lock:
        lease = _leases.get(key)
        if lease is not None and lease[0] <= lease[1]:
            lease[0] += 1
            return lease[0] - 1
    last = _add(key, batch, timeout)
    with _leases_lock:
        if len(_leases) >= MAX_LEASES:  # old windows' keys: drop them all
            _leases.clear()
        _leases[key] = [last - batch + 2, last]
    return last - batch + 1


def _add(key: str, amount: int, timeout: int) -> int:
    """``StoreUnavailable`` while the store cannot be reached (``nexus.store_guard``)."""
    return store_call("count", lambda: _add_now(key, amount, timeout))


def _add_now(key: str, amount: int, timeout: int) -> int:
    if store_is_database():
        return _add_in_database(key, amount, timeout)
    client = store_client()
    if client is not None:
        full = cache.make_key(key)
        pipe = client.pipeline(transaction=False)
        pipe.incrby(full, amount)
        pipe.expire(full, timeout, nx=True)
        value, _ = pipe.execute()
        return int(value)
    try:
        return cache.incr(key, amount)
    except ValueError:  # no counter yet in this window
        pass
    if cache.add(key, amount, timeout):
        return amount
    try:  # another request created it meanwhile
        return cache.incr(key, amount)
    except ValueError:  # and it expired already
        cache.set(key, amount, timeout)
        return amount


def current_counts(keys: list[str]) -> dict[str, int]:
    """The counts under ``keys`` that exist (and have not expired)."""
    if not store_is_database():
        return cache.get_many(keys)
    if not keys:
        return {}
    marks = ", ".join(["%s"] * len(keys))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT name, value FROM {COUNTER_TABLE} WHERE name IN ({marks}) AND expires_at > %s",
            [*keys, int(time.time())],
        )
        return {name: int(value) for name, value in cursor.fetchall()}


def forget_count(key: str) -> None:
    if not store_is_database():
        cache.delete(key)
        return
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {COUNTER_TABLE} WHERE name = %s", [key])


# --- counts in the database ------------------------------------------------------------

COUNTER_TABLE = "nexus_counter"  # nexus.shared_store.models.Counter
#: Expired counts are deleted by one in this many counts a process makes.
PURGE_EVERY = 1000
_counted = itertools.count(1)

# One statement, so two processes counting at once both land: the row is
# created, or added to, or (its window over) started again, and the value
# returned is the one this count made. SQLite 3.35+ and PostgreSQL both speak it.
_UPSERT = f"""
INSERT INTO {COUNTER_TABLE} (name, value, expires_at) VALUES (%s, %s, %s)
ON CONFLICT (name) DO UPDATE SET
    value = CASE WHEN {COUNTER_TABLE}.expires_at <= %s THEN excluded.value
                 ELSE {COUNTER_TABLE}.value + excluded.value END,
    expires_at = CASE WHEN {COUNTER_TABLE}.expires_at <= %s THEN excluded.expires_at
                      ELSE {COUNTER_TABLE}.expires_at END
RETURNING value
"""


def _add_in_database(key: str, amount: int, timeout: int) -> int:
    now = int(time.time())
    with connection.cursor() as cursor:
        cursor.execute(_UPSERT, [key, amount, now + timeout, now, now])
        value = int(cursor.fetchone()[0])
        if next(_counted) % PURGE_EVERY == 0:
            # Window keys are never counted again once their window is over.
            cursor.execute(f"DELETE FROM {COUNTER_TABLE} WHERE expires_at <= %s", [now])
    return value
