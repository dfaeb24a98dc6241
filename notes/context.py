"""The notes a context carries, right after the question: instructions
first, then preferences (oldest first: the order they were given in), then
facts ranked by the question, as many as fit in ``CONTEXT_NOTES_SHARE`` of
the budget. What does not fit is reported as left out."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from django.conf import settings

from notes.models import Note
from sessions_app.models import ChatSession
from sessions_app.search.stopwords import STOP_WORDS
from sessions_app.tokens import count_tokens

NOTES_HEADER = "What the user has asked you to keep in mind:"
# Notes read for one context at most: a person's notes are few, but the read stays bounded.
MAX_NOTES_READ = 200

_WORD = re.compile(r"[a-z0-9]+")
_ORDER = {Note.Kind.INSTRUCTION: 0, Note.Kind.PREFERENCE: 1, Note.Kind.FACT: 2}


@dataclass(slots=True)
class NotesBlock:
    text: str = ""
    tokens: int = 0
    ids: list[int] = field(default_factory=list)
    omitted: list[int] = field(default_factory=list)


def terms(text: str) -> set[str]:
    """Lower-case words without stop words, a plural's ``s`` dropped."""
    found = set()
    for word in _WORD.findall(text.lower()):
        if word in STOP_WORDS:
            continue
        found.add(word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word)
    return found


def ordered(notes: list[Note], question: str) -> list[Note]:
    """Instructions, preferences, then facts by the words they share with the question."""
    asked = terms(question)

    def key(note: Note) -> tuple[int, int, int]:
        shared = len(terms(note.text) & asked) if note.kind == Note.Kind.FACT else 0
        return (_ORDER.get(note.kind, 3), -shared, note.pk)

    return sorted(notes, key=key)


def render(notes: list[Note]) -> str:
    return NOTES_HEADER + "\n" + "\n".join(f"- {note.text}" for note in notes)


def notes_block(*, session: ChatSession, question: str, budget: int) -> NotesBlock:
    """The notes section of a context of ``session`` within the notes' share of ``budget``."""
    share = int(budget * settings.CONTEXT_NOTES_SHARE)
    if share <= 0:
        return NotesBlock()
    notes = list(Note.objects.visible_in(session).only("pk", "kind", "text")[:MAX_NOTES_READ])
    if not notes:
        return NotesBlock()
    kept: list[Note] = []
    omitted: list[int] = []
    used = count_tokens(NOTES_HEADER) + 2  # the header and the separator before the next section
    for note in ordered(notes, question):
        cost = count_tokens(note.text) + 2  # "- " and the line break
        if used + cost <= share:
            kept.append(note)
            used += cost
        else:
            omitted.append(note.pk)
    if not kept:
        return NotesBlock(omitted=omitted)
    text = render(kept)
    return NotesBlock(text=text, tokens=count_tokens(text) + 2, ids=[n.pk for n in kept], omitted=omitted)
