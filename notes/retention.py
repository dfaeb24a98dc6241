"""Deleting notes: a user's erasure (all of them, or one end user's) and the
retention purge (the notes of an end user with no write for
``SESSION_RETENTION_DAYS``). Sessions are deleted by ``summaries.erasure``,
which calls these for the notes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction

from notes.models import Note
from sessions_app.models import ChatSession

BATCH_NOTES = 1000


def _delete_in_batches(notes: Any) -> int:
    deleted = 0
    while True:
        with transaction.atomic():
            pks = list(notes.order_by("pk").values_list("pk", flat=True)[:BATCH_NOTES])
            if not pks:
                return deleted
            _, by_model = Note.objects.filter(pk__in=pks).delete()
            deleted += by_model.get(Note._meta.label, 0)


def notes_erase(*, user: Any, end_user: str | None = None) -> int:
    """Delete ``user``'s notes (``end_user`` None: about everyone; else about
    that end user only, "" the owner in person), with their revisions. The
    number of notes deleted."""
    return _delete_in_batches(Note.objects.of_owner(user, end_user))


def expired_notes_purge(*, cutoff: datetime) -> int:
    """Delete the notes of every (owner, end user) with no write since
    ``cutoff``: no note changed and no session of theirs written since."""
    deleted = 0
    people = (
        Note.objects.filter(updated_at__lt=cutoff).order_by().values_list("owner_id", "end_user").distinct()
    )
    for owner_pk, end_user in list(people[:BATCH_NOTES]):
        active = ChatSession.objects.filter(owner_id=owner_pk, end_user=end_user, updated_at__gte=cutoff)
        recent = Note.objects.filter(owner_id=owner_pk, end_user=end_user, updated_at__gte=cutoff)
        if active.exists() or recent.exists():
            continue
        deleted += _delete_in_batches(Note.objects.filter(owner_id=owner_pk, end_user=end_user))
    return deleted
