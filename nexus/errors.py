"""Errors shared by every app's domain code.

Services and selectors know nothing of HTTP; a view answers these with the
matching status (the API's exception handler and ``nexus.web`` do it for
every view at once).
"""

from __future__ import annotations


class NotFound(Exception):
    """What the caller named does not exist, or is not theirs to see (a 404 to them)."""


class LimitReached(Exception):
    """The caller has used up a limit for now (a 429 with ``Retry-After`` to them).

    ``retry_after``: whole seconds, at least 1, until the limit allows the
    request again. ``message`` is written for the caller.
    """

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = max(1, int(retry_after))


class Conflict(Exception):
    """The request would discard something the caller has not agreed to lose
    (a 409 to them). Sent again with ``field`` set, it goes through; the
    answer names ``field``, as a 400 names a bad one."""

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class Unavailable(Exception):
    """What the request needs cannot be reached right now, and nothing was
    done (a 503 with ``Retry-After`` to them): ``retry_after`` whole seconds."""

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = max(1, int(retry_after))
