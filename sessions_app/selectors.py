"""Reads that enforce who may see what."""

from __future__ import annotations

import uuid as uuid_lib

from django.http import Http404

from sessions_app.models import ChatSession


def session_for_user(user, session_uuid: str | uuid_lib.UUID, queryset=None) -> ChatSession:
    """The session with this uuid if ``user`` may see it; otherwise 404.

    A malformed uuid is a 404 as well: to the caller it names nothing.
    """
    try:
        parsed = session_uuid if isinstance(session_uuid, uuid_lib.UUID) else uuid_lib.UUID(str(session_uuid))
    except (ValueError, TypeError, AttributeError):
        raise Http404("No such session.") from None
    qs = (queryset if queryset is not None else ChatSession.objects.all()).visible_to(user)
    try:
        return qs.get(uuid=parsed)
    except ChatSession.DoesNotExist:
        raise Http404("No such session.") from None
