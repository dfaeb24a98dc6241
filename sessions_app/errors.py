"""Errors of the sessions domain."""

from __future__ import annotations

from datetime import datetime

from nexus.errors import NotFound


class SessionNotFound(NotFound):
    """No session with that uuid that the caller may see, or it was deleted meanwhile."""

    def __init__(self, message: str = "No such session.") -> None:
        super().__init__(message)


class EndUserLocked(ValueError):
    """A new ``end_user`` for a session that already holds episodes: they
    were told by the person it named, and stay that person's."""

    def __init__(self) -> None:
        super().__init__("Can only change while the session has no episodes.")


class EpisodeDateInvalid(ValueError):
    """An episode's ``created_at`` that the session cannot take: in the
    future, earlier than the session's newest episode, or earlier than the
    one before it in the same batch (ids and dates grow together).
    ``position`` is the episode's place in its batch (0 for a single write)."""

    def __init__(self, message: str, *, position: int = 0) -> None:
        super().__init__(message)
        self.position = position


def earlier_than_newest(newest: datetime | None, *, position: int = 0) -> EpisodeDateInvalid:
    shown = newest.isoformat() if newest else "unknown"
    return EpisodeDateInvalid(
        f"Must not be earlier than the session's latest episode ({shown}).", position=position
    )
