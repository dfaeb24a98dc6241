"""Reads that enforce who may see what."""

from __future__ import annotations

import uuid as uuid_lib

from sessions_app.errors import SessionNotFound
from sessions_app.models import ChatSession


def parse_session_uuid(session_uuid: str | uuid_lib.UUID) -> uuid_lib.UUID:
    """The uuid a caller named; a malformed one is ``SessionNotFound``: to the caller it names nothing."""
    if isinstance(session_uuid, uuid_lib.UUID):
        return session_uuid
    try:
        return uuid_lib.UUID(str(session_uuid))
    except (ValueError, TypeError, AttributeError):
        raise SessionNotFound from None


def session_for_user(
    user, session_uuid: str | uuid_lib.UUID, queryset=None, *, change: bool = False
) -> ChatSession:
    """The session with this uuid if ``user`` may read it (``change=True``:
    change it); otherwise ``SessionNotFound``, as for an unknown uuid."""
    parsed = parse_session_uuid(session_uuid)
    qs = queryset if queryset is not None else ChatSession.objects.all()
    qs = qs.changeable_by(user) if change else qs.visible_to(user)
    try:
        return qs.get(uuid=parsed)
    except ChatSession.DoesNotExist:
        raise SessionNotFound from None
