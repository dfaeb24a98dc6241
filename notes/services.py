"""Writing notes: by people (the API, the Memory page, the admin) and by
extraction. Every change keeps the note as it was in a revision, written in
the same transaction.

The service API other parts call: ``note_list``, ``note_create``,
``note_update``, ``note_delete`` (people), ``notes_apply`` (extraction).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from notes.models import NOTE_MAX_CHARS, Note, NoteRevision
from sessions_app.models import END_USER_MAX_CHARS, ChatSession


class NoteInvalid(ValueError):
    """A note's field is unusable; ``field`` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True, slots=True)
class Found:
    """A note extraction found in the user's words. ``replaces``: the note
    it contradicts (by id), when the model said so; ``slot``: the subject
    it fills, when a rule knows it holds one value."""

    kind: str
    text: str
    episode_id: int
    replaces: int | None = None
    slot: str = ""


def clean_text(text: Any) -> str:
    if not isinstance(text, str) or not text.strip():
        raise NoteInvalid("text", "A note needs some text.")
    text = " ".join(text.split())
    if len(text) > NOTE_MAX_CHARS:
        raise NoteInvalid("text", f"A note can be at most {NOTE_MAX_CHARS} characters long.")
    return text


def clean_kind(kind: Any) -> str:
    if kind not in Note.Kind.values:
        raise NoteInvalid("kind", f"kind must be one of: {', '.join(Note.Kind.values)}.")
    return kind


def note_list(*, user: Any, end_user: str | None = None, session: ChatSession | None = None) -> Any:
    """``user``'s notes (``end_user`` None: every end user's), or those a
    context of ``session`` sees."""
    if session is not None:
        return Note.objects.visible_in(session)
    return Note.objects.of_owner(user, end_user)


def note_create(
    *, owner: Any, kind: str, text: str, end_user: str = "", session: ChatSession | None = None
) -> Note:
    """A note written by a person (curated): shared by the owner's shared
    sessions of ``end_user``, or, with a session-scoped ``session``, that
    session's alone."""
    kind, text = clean_kind(kind), clean_text(text)
    if len(end_user) > END_USER_MAX_CHARS:
        raise NoteInvalid("end_user", "end_user can be at most 200 characters long.")
    scoped = session is not None and session.memory_scope != Note.Scope.SHARED
    if session is not None:
        end_user = session.end_user
    return Note.objects.create(
        owner=owner,
        end_user=end_user,
        memory_scope=Note.Scope.SESSION if scoped else Note.Scope.SHARED,
        session=session if scoped else None,
        kind=kind,
        text=text,
        curated=True,
    )


def note_update(*, note: Note, text: str | None = None, kind: str | None = None) -> Note:
    """A person's edit: the note becomes curated (extraction never changes it
    again) and no longer goes with the exchange it came from."""
    new_text = note.text if text is None else clean_text(text)
    new_kind = note.kind if kind is None else clean_kind(kind)
    with transaction.atomic():
        _keep_revision(note, NoteRevision.Source.EDIT)
        note.text, note.kind, note.curated, note.source_episode = new_text, new_kind, True, None
        note.save(update_fields=["text", "kind", "curated", "source_episode", "updated_at"])
    return note


def note_delete(*, note: Note) -> None:
    note.delete()


def _keep_revision(note: Note, source: str) -> None:
    NoteRevision.objects.create(note=note, source=source, kind=note.kind, text=note.text)


def notes_apply(*, session: ChatSession, found: Sequence[Found]) -> list[Note]:
    """Store what extraction found in ``session``'s new episodes; the notes
    made or changed, in order. A statement that replaces a note (by the
    model's word, or by filling the same slot) updates it, its old text kept
    as a revision; a curated note is never changed; a note already held
    word for word is not made twice."""
    if not found:
        return []
    visible = Note.objects.visible_in(session)
    shared = session.memory_scope == Note.Scope.SHARED
    changed: list[Note] = []
    with transaction.atomic():
        held = {note.pk: note for note in visible.select_for_update()}
        for item in found:
            target = held.get(item.replaces) if item.replaces is not None else None
            if target is None and item.slot:
                target = next((n for n in held.values() if n.slot == item.slot and n.kind == item.kind), None)
            same = next((n for n in held.values() if n.text.casefold() == item.text.casefold()), None)
            if same is not None or (target is not None and target.curated):
                continue
            if target is not None:
                _keep_revision(target, NoteRevision.Source.EXTRACTION)
                target.text, target.kind, target.source_episode_id = item.text, item.kind, item.episode_id
                target.save(update_fields=["text", "kind", "source_episode", "updated_at"])
                changed.append(target)
                continue
            note = Note.objects.create(
                owner_id=session.owner_id,
                end_user=session.end_user,
                memory_scope=Note.Scope.SHARED if shared else Note.Scope.SESSION,
                session=None if shared else session,
                source_episode_id=item.episode_id,
                kind=item.kind,
                text=item.text,
                slot=item.slot,
            )
            held[note.pk] = note
            changed.append(note)
    return changed
