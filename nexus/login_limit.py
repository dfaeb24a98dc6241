"""Failed logins, limited per (address, username) and per address.

Never per username alone: that would let anyone lock a victim out. Counts
live in the shared cache (fixed windows of ``LOGIN_FAILURE_LIMIT`` /
``LOGIN_FAILURE_ADDRESS_LIMIT``); every failed ``authenticate()`` counts,
through Django's ``user_login_failed`` signal, whichever page asked. A
success forgets that address's failures for that username only. The web
login, ``/admin/login/`` and ``POST /api/auth/token/`` refuse a POST with
429 and ``Retry-After`` while a limit is reached, right password or not.

While the shared store cannot be reached nothing is counted or refused
(``nexus.store_guard`` logs the outage): logins go on working.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.http import HttpRequest, HttpResponse
from rest_framework.throttling import BaseThrottle

from nexus.counters import count_in_window, current_counts, forget_count
from nexus.store_guard import StoreUnavailable, store_call


def _address(request: Any) -> str:
    # DRF's rule: X-Forwarded-For only from the API_NUM_PROXIES proxies in front.
    return BaseThrottle().get_ident(request)


def _keys(request: Any, username: str) -> list[tuple[str, tuple[int, int] | None]]:
    address = _address(request)
    # surrogatepass: any string a client can send hashes (a lone surrogate too).
    key = f"{address}\n{username.casefold()}".encode("utf-8", "surrogatepass")
    who = hashlib.sha256(key).hexdigest()[:32]
    return [
        (f"login-failures:{who}", settings.LOGIN_FAILURE_LIMIT),
        (f"login-failures:{address}", settings.LOGIN_FAILURE_ADDRESS_LIMIT),
    ]


def _windowed(key: str, seconds: int, now: float) -> str:
    return f"{key}:{int(now // seconds)}"


def login_wait(request: Any, username: str) -> float | None:
    """Seconds until this address may try this username again, or ``None``."""
    now = time.time()
    limits = [(key, limit) for key, limit in _keys(request, username) if limit]
    names = {_windowed(key, limit[1], now): limit for key, limit in limits}
    try:
        counts = store_call("login limit", lambda: current_counts(list(names)))
    except StoreUnavailable:
        return None  # fails open
    waits = [
        (int(now // limit[1]) + 1) * limit[1] - now
        for name, limit in names.items()
        if counts.get(name, 0) >= limit[0]
    ]
    return max(waits) if waits else None


def login_failed(request: Any, username: str) -> None:
    now = time.time()
    for key, limit in _keys(request, username):
        if limit:
            try:
                count_in_window(_windowed(key, limit[1], now), limit[1] + 1)
            except StoreUnavailable:
                return


def login_succeeded(request: Any, username: str) -> None:
    key, limit = _keys(request, username)[0]
    if limit:
        with contextlib.suppress(StoreUnavailable):
            store_call("login limit", lambda: forget_count(_windowed(key, limit[1], time.time())))


def too_many_attempts(wait: float) -> HttpResponse:
    response = HttpResponse("Too many failed logins. Try again later.\n", status=429, content_type="text/plain")
    response["Retry-After"] = str(max(int(wait + 0.999), 1))
    return response


def limited_login(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """A login view that answers 429 to a POST while its limit is reached."""

    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.method == "POST":
            wait = login_wait(request, request.POST.get("username", ""))
            if wait is not None:
                return too_many_attempts(wait)
        return view(request, *args, **kwargs)

    wrapped.__name__ = getattr(view, "__name__", "login")
    wrapped.__doc__ = view.__doc__
    return wrapped


def _failed(sender: Any, credentials: dict, request: Any = None, **kwargs: Any) -> None:
    if request is not None:
        login_failed(request, str(credentials.get("username", "")))


def _succeeded(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    if request is not None:
        login_succeeded(request, user.get_username())


def connect_signals() -> None:
    user_login_failed.connect(_failed, dispatch_uid="nexus.login_limit.failed")
    user_logged_in.connect(_succeeded, dispatch_uid="nexus.login_limit.succeeded")
