"""Reading notes for the pages."""

from __future__ import annotations

from collections.abc import Sequence

from notes.models import Note


def notes_made_by(episode_ids: Sequence[int]) -> dict[int, list[Note]]:
    """The notes each of these exchanges made (or last changed), by episode id; one query."""
    made: dict[int, list[Note]] = {}
    if not episode_ids:
        return made
    for note in Note.objects.filter(source_episode_id__in=list(episode_ids)).order_by("pk"):
        made.setdefault(note.source_episode_id, []).append(note)
    return made
