"""Errors of the sessions domain."""

from __future__ import annotations

from nexus.errors import NotFound


class SessionNotFound(NotFound):
    """No session with that uuid that the caller may see, or it was deleted meanwhile."""

    def __init__(self, message: str = "No such session.") -> None:
        super().__init__(message)
