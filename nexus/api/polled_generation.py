"""Token revocation when the shared store is the database (no Redis).

On Redis every process is told of a revocation at once (``nexus.marks``).
The database tells no one, and reading a per-user mark on every request
would cost the query that looking the token up costs. So there is one
generation for all tokens, in the cache table, and each process reads it at
most once per ``POLL_SECONDS`` (one query per second per process under load,
not one per request):

- A process trusts what it remembers of a token only while it read the
  generation less than ``POLL_SECONDS`` ago, and only under the value it read.
- A revocation writes a new generation, then waits ``POLL_SECONDS`` (and a
  margin) before it answers. Any request served after that answer, in any
  process, finds that process's last read older than the write, so it reads
  the new generation, drops what it remembered and looks the token up: a
  revoked token fails everywhere once the revocation has answered.

Revocations are rare (a deleted token, a deactivated user, a new password);
one of them makes every process look every token up once more, which costs
what a cold start does.
"""

from __future__ import annotations

import math
import threading
import time
import uuid
from typing import Any

from django.core.cache import cache

#: A process reads the generation at most this often while it serves tokens.
POLL_SECONDS = 1.0
#: Beyond a poll interval, for a read that began just before the write to end.
MARGIN_SECONDS = 0.1
KEY = "token-generation:all"
NOT_READ = object()

_lock = threading.Lock()
_read: tuple[object, float] = (NOT_READ, -math.inf)  # (value, when its read began)


def current(now: float) -> Any:
    """The generation as of a read that began less than ``POLL_SECONDS`` before ``now``."""
    global _read
    value, began = _read
    if now - began < POLL_SECONDS:
        return value
    began = time.monotonic()
    value = cache.get(KEY)
    with _lock:
        if began > _read[1]:
            _read = (value, began)
    return value


def revoke_everywhere() -> None:
    """Give all tokens a new generation and return once every process will
    read it before trusting what it remembers (see the module docstring)."""
    global _read
    cache.set(KEY, uuid.uuid4().hex, None)
    with _lock:
        _read = (NOT_READ, -math.inf)  # this process reads it at its next request
    time.sleep(POLL_SECONDS + MARGIN_SECONDS)


def forget() -> None:
    """Read the generation again at the next request (tests)."""
    global _read
    with _lock:
        _read = (NOT_READ, -math.inf)
