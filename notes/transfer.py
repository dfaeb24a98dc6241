"""Notes as export lines, and back::

    {"type": "note", "kind", "text", "end_user", "memory_scope", "curated", "created_at", "updated_at"}

A session-scoped session's note follows that session's lines and comes
back as the imported session's own; a shared note comes back shared, about
the same end user.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from notes.models import NOTE_MAX_CHARS, Note
from sessions_app.models import END_USER_MAX_CHARS, ChatSession

NOTE = "note"


def note_lines(notes: Iterable[Note]) -> Iterator[str]:
    for note in notes:
        line = {
            "type": NOTE,
            "kind": note.kind,
            "text": note.text,
            "end_user": note.end_user,
            "memory_scope": note.memory_scope,
            "curated": note.curated,
            "created_at": note.created_at.isoformat(),
            "updated_at": note.updated_at.isoformat(),
        }
        yield json.dumps(line, ensure_ascii=False)


def check_note_line(obj: dict) -> dict[str, Any]:
    """A note line's fields; ``ValueError`` names the problem."""
    kind, text, end_user = obj.get("kind"), obj.get("text"), obj.get("end_user", "")
    if kind not in Note.Kind.values:
        raise ValueError(f'"kind" must be one of: {", ".join(Note.Kind.values)}')
    if not isinstance(text, str) or not text.strip() or len(text) > NOTE_MAX_CHARS:
        raise ValueError(f'"text" must be a non-empty string of at most {NOTE_MAX_CHARS} characters')
    if not isinstance(end_user, str) or len(end_user) > END_USER_MAX_CHARS:
        raise ValueError(f'"end_user" must be a string of at most {END_USER_MAX_CHARS} characters')
    scope = obj.get("memory_scope", Note.Scope.SHARED)
    if scope not in Note.Scope.values:
        raise ValueError(f'"memory_scope" must be one of: {", ".join(Note.Scope.values)}')
    curated = obj.get("curated", False)
    if not isinstance(curated, bool):
        raise ValueError('"curated" must be true or false')
    text = " ".join(text.split())
    return {"kind": kind, "text": text, "end_user": end_user, "scope": scope, "curated": curated}


def notes_import(*, owner: Any, session: ChatSession, rows: list[dict[str, Any]]) -> list[Note]:
    """Store checked note lines read with ``session``'s lines (in the caller's transaction)."""
    return Note.objects.bulk_create(
        Note(
            owner=owner,
            end_user=session.end_user if row["scope"] == Note.Scope.SESSION else row["end_user"],
            memory_scope=row["scope"],
            session=session if row["scope"] == Note.Scope.SESSION else None,
            kind=row["kind"],
            text=row["text"],
            curated=row["curated"],
        )
        for row in rows
    )
