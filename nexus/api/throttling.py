"""Throttles for anonymous and signed-in callers.

Rates come from settings at request time (DRF's own classes read
``DEFAULT_THROTTLE_RATES`` once at import, so an environment value or a
test's ``override_settings`` would be missed). Counting is a fixed window
per caller: one atomic count in the shared store per request
(``nexus.counters``: one round trip on Redis), whatever the rate.
DRF's sliding log keeps every timestamp of the window and pickles the whole
list on each request, which grows with the rate itself.

While the shared store cannot be reached, throttles let every request
through (``nexus.store_guard`` logs the outage): a count the API cannot keep
is no reason to refuse the work it guards.
"""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from django.conf import settings
from rest_framework.throttling import AnonRateThrottle, UserRateThrottle

from nexus.counters import count_in_window
from nexus.store_guard import StoreUnavailable

if TYPE_CHECKING:  # DRF imports this module while rest_framework.views is loading
    from rest_framework.request import Request
    from rest_framework.views import APIView


#: A process takes this share of a window's rate at once (see ``count_in_window``).
BATCH_SHARE = 200


def batch_for(rate: int) -> int:
    """Numbers a process takes per round trip: 1 for low rates (exact), more for high ones."""
    return max(1, rate // BATCH_SHARE)


class _FixedWindowMixin:
    rate: str | None
    num_requests: int
    duration: int
    cache_format = "throttle_%(scope)s_%(ident)s"

    def allow_request(self, request: Request, view: APIView) -> bool:
        if self.rate is None:
            return True
        ident = self.get_cache_key(request, view)  # type: ignore[attr-defined]
        if ident is None:
            return True
        now = time.time()
        window = int(now // self.duration)
        self.window_ends = (window + 1) * self.duration
        self.now = now
        key = f"{ident}_{window}"
        try:
            count = count_in_window(key, self.duration + 1, batch=batch_for(self.num_requests))
        except StoreUnavailable:
            return True  # fails open
        return count <= self.num_requests

    def wait(self) -> float | None:
        return max(self.window_ends - self.now, 0.0)


class AnonThrottle(_FixedWindowMixin, AnonRateThrottle):
    def get_rate(self) -> str | None:
        return settings.API_THROTTLE_ANON or None


class UserThrottle(_FixedWindowMixin, UserRateThrottle):
    def get_rate(self) -> str | None:
        return settings.API_THROTTLE_USER or None


def anonymous_wait(request: Request) -> float | None:
    """Count a request whose credentials were refused against the anonymous
    throttle; the wait when that exceeds the rate, else ``None``. (The
    throttle's own key would ask ``request.user``, which is what failed.)"""
    throttle = AnonThrottle()
    if throttle.rate is None:
        return None
    ident = throttle.cache_format % {"scope": throttle.scope, "ident": throttle.get_ident(request)}
    window = int(time.time() // throttle.duration)
    throttle.now = time.time()
    throttle.window_ends = (window + 1) * throttle.duration
    try:
        count = count_in_window(f"{ident}_{window}", throttle.duration + 1)
    except StoreUnavailable:
        return None  # fails open
    return throttle.wait() if count > throttle.num_requests else None


def user_wait(user: Any) -> float | None:
    """Count one request of ``user`` against the per-user throttle, in the
    window the REST API counts its requests in (a caller's calls through
    another interface share its rate); the wait when that exceeds the rate,
    else ``None``."""
    throttle = UserThrottle()
    if throttle.rate is None:
        return None
    # The throttle's key reads ``request.user`` alone.
    allowed = throttle.allow_request(SimpleNamespace(user=user), None)  # type: ignore[arg-type]
    return None if allowed else throttle.wait()
