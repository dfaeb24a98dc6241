"""Errors of the sessions domain."""

from __future__ import annotations

from datetime import datetime

from django.core.exceptions import ValidationError

from nexus.errors import Conflict, NotFound


class SessionNotFound(NotFound):
    """No session with that uuid that the caller may see, or it was deleted meanwhile."""

    def __init__(self, message: str = "No such session.") -> None:
        super().__init__(message)


class EndUserNotAllowed(ValidationError):
    """A session of another end user than the one the caller's API key is
    bound to. A Django ``ValidationError`` naming ``end_user``: the API
    answers it as a 400 naming the field."""

    def __init__(self, bound: str) -> None:
        super().__init__({"end_user": [f"This API key acts only for the end user {bound!r}."]})


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


class EpisodeNotFound(NotFound):
    """No episode with that id in the session (deleted, or another session's)."""

    def __init__(self, message: str = "No such episode in this session.") -> None:
        super().__init__(message)


class ReplyAlreadyStored(Conflict):
    """A reply was given for an exchange that already has one: a reply is filled in once."""

    def __init__(self) -> None:
        super().__init__(
            "This exchange already has its reply; a reply is filled in once (delete the exchange to "
            "store it again).",
            field="response",
        )
