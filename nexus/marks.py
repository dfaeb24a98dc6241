"""Marks in the shared store that every process sees change at once, read
without a round trip to the store.

A mark is a value under a key (a user's token generation, say) that other
processes compare with what they read earlier. Reading it from Redis on
every request costs a round trip per request; under load that wait is what
an API request spends most on. So on Redis each process keeps a mirror of
the marks it has read, and ``set_mark`` pushes every change to all of them:

- The store stays the truth: ``set_mark`` writes the mark there first, then
  publishes it on one channel. Every process that serves requests holds a
  subscription (``MarkWatch``, one listener thread); the listener writes the
  new value into the mirror and acknowledges it.
- ``set_mark`` returns once every subscriber has acknowledged, so when a
  revocation's response is sent, every process already holds the new value.
- A subscriber that cannot acknowledge (stuck, cut off) must not go on
  trusting its mirror: the listener pings the store every ``PING_SECONDS``,
  and the mirror is trusted only for ``LEASE_SECONDS`` after the store was
  last heard. ``set_mark`` waits for missing acknowledgements until every
  lease that was current when it published has run out.
- Whenever the mirror is not trusted (no subscription yet, reconnecting,
  lease run out) ``current_mark`` reads the store, as every read did before.
  A new or restored subscription starts with an empty mirror: changes made
  while it was away were never pushed to it.

While the store cannot be reached, ``current_mark`` and ``set_mark`` raise
``StoreUnavailable`` (``nexus.store_guard``); a lost subscription counts as
an outage there too, as changes may have been published while it was away.

A mark is changed only through ``set_mark``: a write that publishes nothing
would leave the mirrors behind. Without Redis (the database as the store,
or one process's memory) ``current_mark`` and ``set_mark`` are plain cache
calls: every process reads the same rows, and nothing is mirrored.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import uuid
from typing import Any

import redis
from django.core.cache import cache

from nexus.counters import store_client
from nexus.store_guard import connection_lost, store_call

logger = logging.getLogger("nexus.marks")

#: How long after the store was last heard a process trusts its mirror.
LEASE_SECONDS = 2.0
#: How often the listener asks the store for a sign of life (well inside the lease).
PING_SECONDS = 0.5
#: Beyond the lease, for a change published just before a subscriber was cut off to reach it.
ACK_MARGIN_SECONDS = 0.5
#: Marks a mirror holds at most; past that it starts again empty.
MAX_MIRRORED = 10_000
_MISSING = object()


def current_mark(key: str) -> object:
    """The value under ``key`` as the store holds it (raw bytes on Redis),
    to compare with an earlier read, never to decode."""
    client = store_client()
    if client is None:
        return store_call("marks", lambda: cache.get(key))
    full = cache.make_key(key)
    watch = watch_for(client)
    if not watch.trusted():
        return store_call("marks", lambda: client.get(full))
    found = watch.mirrored(full)
    if found is not _MISSING:
        return found
    # First read of this mark while subscribed: later changes are pushed.
    seen = watch.changes_seen
    value = store_call("marks", lambda: client.get(full))
    watch.mirror(full, value, if_unchanged_since=seen)
    return value


def set_mark(key: str, value: str, timeout: int) -> None:
    """Give ``key`` a new value (it expires after ``timeout`` seconds) and
    return once every process has it (see the module docstring)."""
    store_call("marks", lambda: _set_mark(key, value, timeout))


def _set_mark(key: str, value: str, timeout: int) -> None:
    client = store_client()
    if client is None:
        cache.set(key, value, timeout)
        return
    full = cache.make_key(key)
    raw = value.encode()
    client.set(full, raw, ex=timeout)
    watch = _watches.get((os.getpid(), id(client)))
    if watch is not None:
        watch.changed(full, raw)  # this process, without waiting for its own listener
    ack_key = cache.make_key(f"mark-ack:{uuid.uuid4().hex}")
    message = json.dumps({"key": full, "value": value, "ack": ack_key})
    subscribers = client.publish(changes_channel(client), message)
    _await_acks(client, ack_key, subscribers)


def changes_channel(client: redis.Redis) -> str:
    """Where mark changes are published: one channel per shared cache. Channels
    are server-wide, not per database, so the name holds the database number
    as well as the cache's key prefix (caches on one server stay apart)."""
    db = client.get_connection_kwargs().get("db", 0)
    return f"{cache.make_key('mark-changes')}:db{db}"


def _await_acks(client: redis.Redis, ack_key: str, expected: int) -> None:
    deadline = time.monotonic() + LEASE_SECONDS + ACK_MARGIN_SECONDS
    acked = 0
    while acked < expected:
        left = deadline - time.monotonic()
        if left <= 0:
            # Whoever did not answer has stopped trusting its mirror by now.
            logger.warning("mark change not acknowledged by %s of %s processes", expected - acked, expected)
            break
        # Short waits: the client's socket timeout bounds each call.
        if client.blpop([ack_key], timeout=min(left, 1.0)) is not None:
            acked += 1
    client.delete(ack_key)


class MarkWatch:
    """One process's subscription to mark changes, its mirror and its lease."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self.channel = changes_channel(client)
        self.changes_seen = 0
        self._values: dict[str, object] = {}
        self._lock = threading.Lock()
        self._subscribed = False
        self._last_heard = 0.0
        self._outage = False
        self._thread = threading.Thread(target=self._listen, name="nexus-mark-watch", daemon=True)
        self._thread.start()

    def trusted(self) -> bool:
        return self._subscribed and time.monotonic() - self._last_heard < LEASE_SECONDS

    def mirrored(self, full_key: str) -> object:
        return self._values.get(full_key, _MISSING)

    def mirror(self, full_key: str, value: object, *, if_unchanged_since: int) -> None:
        """Keep ``value`` read from the store, unless a change arrived since
        the read began (the value could be older than that change)."""
        with self._lock:
            if if_unchanged_since != self.changes_seen or not self._subscribed:
                return
            if len(self._values) >= MAX_MIRRORED:
                self._values.clear()
            self._values[full_key] = value

    def changed(self, full_key: str, value: object) -> None:
        """A change of the mark: it replaces whatever the mirror holds."""
        with self._lock:
            self.changes_seen += 1
            self._values[full_key] = value

    def _forget_all(self) -> None:
        with self._lock:
            self._subscribed = False
            self._values.clear()
            self.changes_seen += 1

    def _listen(self) -> None:
        while True:
            pubsub = self.client.pubsub()
            try:
                pubsub.subscribe(self.channel)
                self._serve(pubsub)
            except Exception:  # whatever broke, the mirror is no longer trusted
                connection_lost()
                if not self._outage:  # logged once per outage, not once per retry
                    logger.warning(
                        "mark subscription lost; marks are read from the store until it is back",
                        exc_info=True,
                    )
                self._outage = True
            finally:
                self._forget_all()
                pubsub.close()
            time.sleep(PING_SECONDS)

    def _serve(self, pubsub: Any) -> None:
        next_ping = 0.0
        while True:
            now = time.monotonic()
            if now >= next_ping:
                pubsub.ping()
                next_ping = now + PING_SECONDS
            message = pubsub.get_message(timeout=PING_SECONDS / 2)
            if message is None:
                continue
            # Heard from the store only after what came before this was applied.
            if message["type"] == "subscribe":
                with self._lock:
                    self._values.clear()
                    self.changes_seen += 1
                    self._subscribed = True
                self._outage = False
            elif message["type"] == "message":
                self._apply(json.loads(message["data"]))
            self._last_heard = time.monotonic()

    def _apply(self, change: dict[str, str]) -> None:
        self.changed(change["key"], change["value"].encode())
        pipe = self.client.pipeline(transaction=False)
        pipe.rpush(change["ack"], 1)
        pipe.expire(change["ack"], 60)
        pipe.execute()


_watches: dict[tuple[int, int], MarkWatch] = {}
_watches_lock = threading.Lock()


def watch_for(client: redis.Redis) -> MarkWatch:
    """This process's watch on ``client``'s store, started on first use
    (a forked child starts its own: threads do not survive a fork)."""
    key = (os.getpid(), id(client))
    watch = _watches.get(key)
    if watch is None:
        with _watches_lock:
            watch = _watches.get(key)
            if watch is None:
                watch = _watches[key] = MarkWatch(client)
    return watch
