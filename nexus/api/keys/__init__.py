"""API keys: named keys per integration, each acting as its user.

A key is shown once and stored as its SHA-256 digest (a random secret of 256
bits needs no slow hash, and the lookup stays one indexed query, as a token's
is). It authenticates through ``nexus.api.authentication`` like the account
token, with the same per-process memory and cross-process revocation; the
user it yields carries the key (``key_of``), which takes away every staff
permission (``sessions_app.access``) and, for a key bound to an end user,
confines every session read and change to that end user's sessions.
"""

from __future__ import annotations

from typing import Any

#: Every key starts with this, so the authentication tells it from an account token (40 hex digits).
PREFIX = "nxk_"

#: The attribute of the request's user that holds the key it authenticated with.
USER_ATTRIBUTE = "nexus_api_key"


def key_of(user: Any) -> Any:
    """The ``ApiKey`` ``user`` authenticated with, or ``None`` (a token, a signed-in page, a command)."""
    return getattr(user, USER_ATTRIBUTE, None)


def bound_end_user(user: Any) -> str | None:
    """The end user a key confines ``user`` to, or ``None`` when nothing confines it."""
    key = key_of(user)
    if key is None or not key.end_user:
        return None
    return key.end_user
