"""The note tools: list, add, change and delete what Nexus keeps about the
person. Each validates as ``/api/notes/`` does, with its serializers, and
calls the same services: another owner's note, or for a key bound to an end
user another end user's, is "No such note." as an unknown one."""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ValidationError

from notes.api.serializers import NoteChangeSerializer, NoteSerializer, NoteWriteSerializer
from notes.api.views import note_for_user
from notes.services import NoteInvalid, note_create, note_delete, note_list, note_update
from sessions_app.access import end_user_written
from sessions_app.api.serializers import SessionFilterSerializer
from sessions_app.errors import SessionNotFound
from sessions_app.selectors import session_for_user
from summaries.mcp.memory_tools import as_json, checked
from summaries.mcp.registry import tool

#: ``list_notes`` answers at most this many notes (a context reads at most 200 too).
MAX_NOTES_LISTED = 200


def note_json(note: Any) -> dict[str, Any]:
    return as_json(NoteSerializer(note).data)


@tool
def list_notes(
    user: Any, end_user: str | None = None, session: str | None = None, limit: int = 100
) -> dict[str, Any]:
    """The notes Nexus keeps about the people you serve (instructions, preferences, facts):
    `end_user` keeps one person's (an empty string: the account's owner in person); `session`
    (a session id) gives instead the notes that session's context sees."""
    if not 1 <= limit <= MAX_NOTES_LISTED:
        raise ValidationError({"limit": [f"Between 1 and {MAX_NOTES_LISTED}."]})
    if session is not None and end_user is not None:
        raise ValidationError({"session": ["Give session or end_user, not both."]})
    if session is not None:
        notes = note_list(user=user, session=session_for_user(user, session))
    else:
        person = checked(SessionFilterSerializer, {"end_user": end_user}).get("end_user")
        notes = note_list(user=user, end_user=person)
    rows = notes.select_related("session").order_by("pk")[:limit]
    return {"notes": as_json(NoteSerializer(rows, many=True).data)}


@tool
def add_note(
    user: Any, kind: str, text: str, end_user: str = "", session: str | None = None
) -> dict[str, Any]:
    """Keep a note about a person for good: `kind` is instruction, preference or fact. It is
    about `end_user` (empty: the account's owner in person) and shared by that person's shared
    sessions; with `session`, about that session's person, and a session-scoped session's alone.
    Every later context that can see it carries it."""
    data = checked(
        NoteWriteSerializer, {"kind": kind, "text": text, "end_user": end_user, "session": session}
    )
    target = None
    if data["session"] is not None:
        try:
            target = session_for_user(user, data["session"], change=True)
        except SessionNotFound:
            raise ValidationError({"session": ["No such session."]}) from None
    try:
        note = note_create(
            owner=user,
            kind=data["kind"],
            text=data["text"],
            end_user=end_user_written(user, data["end_user"], creating=True),
            session=target,
        )
    except NoteInvalid as exc:
        raise ValidationError({exc.field: [str(exc)]}) from None
    return note_json(note)


@tool
def update_note(
    user: Any,
    id: int,
    text: str | None = None,
    kind: str | None = None,
) -> dict[str, Any]:
    """Change a note's `text` and/or `kind` (by its `id`); extraction never changes it again."""
    note = note_for_user(user, str(id))
    changes = checked(NoteChangeSerializer, {"text": text, "kind": kind})
    try:
        note_update(note=note, **changes)
    except NoteInvalid as exc:
        raise ValidationError({exc.field: [str(exc)]}) from None
    return note_json(note)


@tool
def delete_note(user: Any, id: int) -> dict[str, Any]:
    """Delete a note (by its `id`)."""
    note_delete(note=note_for_user(user, str(id)))
    return {"deleted": id}
