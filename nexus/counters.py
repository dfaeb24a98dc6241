"""Counters and marks in the shared store that cost one round trip.

A throttle counts every API request. Django's cache API gives no atomic
"add one, creating the key with an expiry": on Redis ``incr`` first asks
whether the key exists (a round trip of its own) and a new window needs an
``add`` too. On Redis this sends INCR and EXPIRE NX in one pipeline instead,
through redis-py's documented client; on any other cache (local memory in
the embedded default) it keeps to the cache API.
"""

from __future__ import annotations

from functools import lru_cache

import redis
from django.conf import settings
from django.core.cache import cache


def _redis_client() -> redis.Redis | None:
    config = settings.CACHES["default"]
    if not config["BACKEND"].endswith(".RedisCache"):
        return None
    return _client_for(config["LOCATION"], tuple(sorted(config.get("OPTIONS", {}).items())))


@lru_cache(maxsize=4)
def _client_for(location: str, options: tuple[tuple[str, object], ...]) -> redis.Redis:
    # One client (and pool) per server; redis-py's pool notices a fork and reconnects in the child.
    return redis.Redis.from_url(location, **dict(options))


def count_in_window(key: str, timeout: int) -> int:
    """Add one to the counter ``key`` (which expires ``timeout`` seconds
    after its first count) and return its new value, atomically."""
    client = _redis_client()
    if client is not None:
        full = cache.make_key(key)
        pipe = client.pipeline(transaction=False)
        pipe.incr(full)
        pipe.expire(full, timeout, nx=True)
        value, _ = pipe.execute()
        return int(value)
    try:
        return cache.incr(key)
    except ValueError:  # no counter yet in this window
        pass
    if cache.add(key, 1, timeout):
        return 1
    try:  # another request created it meanwhile
        return cache.incr(key)
    except ValueError:  # and it expired already
        cache.set(key, 1, timeout)
        return 1


def current_mark(key: str) -> object:
    """The value under ``key`` as the store holds it (raw bytes on Redis),
    to compare with an earlier read, never to decode. Read with the client
    above: Django's Redis cache builds a new client object on every call,
    which on the API's hot path costs more than the round trip itself."""
    client = _redis_client()
    if client is not None:
        return client.get(cache.make_key(key))
    return cache.get(key)
