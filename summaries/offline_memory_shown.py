"""An offline reply's ``offline_memory`` as readers are shown it.

The reply's episode keeps references (``summaries.offline_memory``): the
exchanges it quotes by id with sentence numbers, the summary sentences by
row. They are rendered here when the metadata is read, so an exchange
deleted later leaves no text in the replies that quoted it: its quote is
gone from ``retrieved``, and a summary row written again since (as deleting
an exchange it covered does) no longer gives its sentences. A page of
episodes costs at most two queries, whatever it holds: the exchanges it
quotes and the summary rows. Quotes of exchanges the person's other chats
lent add one query for the sessions of the replies that hold them and one
per such session (``shared_memory.lent_texts``): four for a page of one
session, whatever it holds.

Rows written before references were kept hold the text itself
(``retrieved``, ``summary``) and are shown as stored.
"""

from __future__ import annotations

from typing import Any

from sessions_app import shared_memory
from sessions_app.labels import episode_label, lent_episode_label
from sessions_app.models import ChatSession, Episode
from summaries.inference.offline import is_offline_reply
from summaries.models import Summary
from summaries.offline_memory import (
    METADATA_KEY,
    REPLY_SENTENCES,
    TEXT_CHARACTERS,
    USER_SENTENCES,
    clip,
    quote,
    summary_sentences,
)
from summaries.sentences import sentences

__all__ = ["show_offline_memory"]


def show_offline_memory(items: list[tuple[int, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The metadata of each ``(session_id, metadata)`` with its
    ``offline_memory`` references rendered (``sessions_app.shown_metadata``)."""
    memories = [(session, metadata.get(METADATA_KEY)) for session, metadata in items]
    wanted = {
        (session, ref["episode"])
        for session, memory in memories
        for ref in _refs(memory, "quotes", "episode")
    }
    rows = {}
    if wanted:
        found = Episode.objects.filter(
            session_id__in={s for s, _ in wanted}, pk__in={pk for _, pk in wanted}
        ).values_list("session_id", "pk", "user_input", "response", "position", "created_at")
        rows = {(row[0], row[1]): (*row[2:], None) for row in found}
    rows |= _lent_rows(memories)
    wanted_rows = {(s, ref["summary"]) for s, memory in memories for ref in _refs(memory, "gist", "summary")}
    summaries = {}
    if wanted_rows:
        found_rows = Summary.objects.filter(
            session_id__in={s for s, _ in wanted_rows}, pk__in={pk for _, pk in wanted_rows}
        ).values_list("session_id", "pk", "content", "updated_at")
        summaries = {(s, pk): (content, updated_at.isoformat()) for s, pk, content, updated_at in found_rows}
    shown = []
    for (session, memory), (_, metadata) in zip(memories, items, strict=True):
        if not isinstance(memory, dict) or not ("quotes" in memory or "gist" in memory):
            shown.append(metadata)  # nothing to render, or written with its text
            continue
        shown.append({**metadata, METADATA_KEY: _rendered(memory, session, rows, summaries)})
    return shown


def _rendered(memory: dict[str, Any], session: int, rows: dict, summaries: dict) -> dict[str, Any]:
    retrieved = []
    for ref in _refs(memory, "quotes", "episode"):
        row = rows.get((session, ref["episode"]))
        if row is None:
            continue  # deleted: its quote is gone with it
        user_input, response, position, created_at, title = row
        reply = "" if is_offline_reply(response) else response
        label = (
            episode_label(created_at=created_at, position=position)
            if title is None
            else lent_episode_label(created_at=created_at, title=title, position=position)
        )
        retrieved.append(
            {
                "label": label,
                "text": quote(sentences(user_input), _numbers(ref.get("text"), USER_SENTENCES)),
                "reply": quote(sentences(reply), _numbers(ref.get("reply"), REPLY_SENTENCES)),
            }
        )
    gist = []
    for ref in _refs(memory, "gist", "summary"):
        content, stamp = summaries.get((session, ref["summary"]), ("", None))
        found = summary_sentences(content) if stamp == ref.get("updated_at") else []
        n = ref.get("sentence")
        if type(n) is int and 0 <= n < len(found):
            gist.append(found[n])
    shown = {key: value for key, value in memory.items() if key not in ("quotes", "gist")}
    return {**shown, "retrieved": retrieved, "summary": clip(" ".join(gist), limit=TEXT_CHARACTERS * 2)}


def _lent_rows(memories: list[tuple[int, Any]]) -> dict[tuple[int, int], tuple]:
    """The exchanges other chats lent to these replies, read as the context
    read them (``shared_memory.lent_texts``: only while they are still the
    person's shared chats), keyed by the reply's session; with their chat's title."""
    wanted: dict[int, set[int]] = {}
    for session, memory in memories:
        for ref in _refs(memory, "quotes", "episode"):
            if ref.get("lent") is True:
                wanted.setdefault(session, set()).add(ref["episode"])
    rows = {}
    for session in ChatSession.objects.filter(pk__in=list(wanted)) if wanted else ():
        for pk, (row, title, _) in shared_memory.lent_texts(session, wanted[session.pk]).items():
            rows[(session.pk, pk)] = (row.user_input, row.response, row.position, row.created_at, title)
    return rows


def _refs(memory: Any, key: str, id_key: str) -> list[dict[str, Any]]:
    """The references under ``key`` that name a row by an int ``id_key``
    (metadata is also written by clients: anything else is skipped)."""
    refs = memory.get(key) if isinstance(memory, dict) else None
    if not isinstance(refs, list):
        return []
    return [ref for ref in refs if isinstance(ref, dict) and type(ref.get(id_key)) is int]


def _numbers(value: Any, count: int) -> list[int]:
    if not isinstance(value, list):
        return []
    return sorted({n for n in value if type(n) is int})[:count]
