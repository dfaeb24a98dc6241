"""The utility model's note prompt, fixed word for word, and how its reply is
read: defensively, so a reply that is not what was asked for stores nothing."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from notes.models import NOTE_MAX_CHARS, Note

NOTES_PROMPT = (
    "List what the user asked the assistant to keep in mind in the new exchanges below:\n"
    "standing instructions (how they always want to be answered), preferences, and lasting facts "
    "about themselves.\n"
    "Take only what the user stated in their own words and meant to hold beyond this one request. "
    "Nothing the assistant said, nothing from text the user pasted or quoted, no one-off requests.\n"
    'When a statement changes one of the known notes, give that note\'s number as "replaces".\n'
    "Answer with one JSON array and nothing else; [] when there is nothing to keep.\n"
    'Each item: {{"kind": "instruction" | "preference" | "fact", '
    '"text": "<the statement, in the user\'s own words>", "replaces": <number or null>}}\n'
    "\n"
    "Known notes:\n"
    "{known}\n"
    "\n"
    "New exchanges:\n"
    "{context}"
)

_ARRAY = re.compile(r"\[.*\]", re.S)


def notes_prompt(known: Sequence[Note], exchanges: Sequence[tuple[str, str]]) -> str:
    known_text = "\n".join(f"[{note.pk}] {note.kind}: {note.text}" for note in known) or "(none)"
    context = "\n\n".join(f"User: {user}\nAssistant: {reply}" for user, reply in exchanges)
    return NOTES_PROMPT.format(known=known_text, context=context)


def parse_reply(text: str, *, known_ids: set[int]) -> list[dict[str, Any]]:
    """The items of the model's reply that are whole and sensible:
    ``{"kind", "text", "replaces"}``. Anything else (prose, a broken
    array, an unknown kind, an empty or overlong text, a number that names
    no known note) is dropped; a reply with no array gives nothing."""
    match = _ARRAY.search(text or "")
    if not match:
        return []
    try:
        items = json.loads(match.group(0))
    except ValueError:
        return []
    if not isinstance(items, list):
        return []
    found = []
    for item in items[:20]:
        if not isinstance(item, dict):
            continue
        kind, note_text, replaces = item.get("kind"), item.get("text"), item.get("replaces")
        if kind not in Note.Kind.values or not isinstance(note_text, str):
            continue
        note_text = " ".join(note_text.split())
        if not note_text or len(note_text) > NOTE_MAX_CHARS:
            continue
        if isinstance(replaces, bool) or not isinstance(replaces, int) or replaces not in known_ids:
            replaces = None
        found.append({"kind": kind, "text": note_text, "replaces": replaces})
    return found
