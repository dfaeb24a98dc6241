"""A user's memory as JSON lines, out and in: sessions with their summaries.

The lines are ``sessions_app.transcripts``' (a ``nexus-transcript/2`` header
per session, then its episodes oldest first), each session followed by its
summary rows, oldest range first::

    {"type": "summary", "content", "first_index", "last_index", "first_position",
     "last_position", "curated", "token_count", "model", "created_at"}

``first_index`` and ``last_index`` count (from 0) the episode lines in that
session's part of the file, since episode ids do not survive an import:
the rows are recreated on the new ids, with their curated flag.
``first_position`` and ``last_position`` are the row's range as people read
it in the exported session ("Exchanges 5–12"); like the episode lines'
``position`` they are informational (``nexus-transcript/1`` files have
none): the import numbers the episodes anew and takes the rows' positions
from them.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable, Iterator
from functools import partial
from typing import Any

from django.db import transaction

from notes.models import Note
from notes.transfer import NOTE, check_note_line, note_lines, notes_import
from sessions_app.models import ChatSession, Episode
from sessions_app.tokens import count_tokens
from sessions_app.transcripts import ParsedTranscript, export_lines, parse_transcripts, transcript_import
from sessions_app.validation import text_problem
from summaries.coverage import refresh_coverage
from summaries.models import Summary
from summaries.summary_index import queue_refresh

SUMMARY = "summary"


# --- out -------------------------------------------------------------------------


def _summary_lines(session: ChatSession, ids: list[int]) -> Iterator[str]:
    rows = Summary.objects.chain(session.pk).values(
        "content", "first_episode_id", "last_episode_id", "first_position", "last_position",
        "curated", "token_count", "model", "created_at",
    )  # fmt: skip
    for row in rows:
        first = bisect.bisect_left(ids, row["first_episode_id"])
        last = bisect.bisect_right(ids, row["last_episode_id"]) - 1
        if first > last:
            continue  # covers no exported episode (cannot happen while rows tile)
        line = {
            "type": SUMMARY,
            "content": row["content"],
            "first_index": first,
            "last_index": last,
            "first_position": row["first_position"],
            "last_position": row["last_position"],
            "curated": row["curated"],
            "token_count": row["token_count"],
            "model": row["model"],
            "created_at": row["created_at"].isoformat(),
        }
        yield json.dumps(line, ensure_ascii=False)


def user_export_lines(*, user: Any, end_user: str | None = None) -> Iterator[str]:
    """Every session of ``user``, oldest first: header, episodes, summaries
    (lines without newlines); then the notes (``notes.transfer``): a
    session-scoped session's after it, the shared ones at the end. With
    ``end_user``, that end user's sessions and notes only."""
    sessions = ChatSession.objects.filter(owner=user).select_related("owner").order_by("created_at", "pk")
    if end_user is not None:
        sessions = sessions.filter(end_user=end_user)
    for session in sessions.iterator(chunk_size=100):
        ids: list[int] = []
        yield from export_lines(session, ids=ids)
        yield from _summary_lines(session, ids)
        yield from note_lines(Note.objects.filter(session_id=session.pk))
    yield from note_lines(Note.objects.of_owner(user, end_user).filter(session__isnull=True))


# --- in --------------------------------------------------------------------------


def _index(obj: dict, key: str) -> int:
    value = obj.get(key)
    if type(value) is not int or value < 0:
        raise ValueError(f'"{key}" must be a whole number, 0 or more')
    return value


def check_summary_line(obj: dict) -> dict[str, Any]:
    """A summary line's content, positions and curated flag; ``ValueError`` names the problem."""
    content = obj.get("content")
    if not isinstance(content, str) or not content.strip():
        raise ValueError('"content" must be a non-empty string')
    problem = text_problem(content)
    if problem:
        raise ValueError(f'"content": {problem}')
    first, last = _index(obj, "first_index"), _index(obj, "last_index")
    if first > last:
        raise ValueError('"first_index" must not be after "last_index"')
    curated = obj.get("curated", False)
    if not isinstance(curated, bool):
        raise ValueError('"curated" must be true or false')
    model = obj.get("model", "")
    return {
        "content": content,
        "first_index": first,
        "last_index": last,
        "curated": curated,
        "model": model[:200] if isinstance(model, str) and not text_problem(model) else "",
    }


def parse_memory(lines: Iterable[bytes]) -> tuple[list[ParsedTranscript], list[tuple[int, str]]]:
    """``parse_transcripts`` with summary lines, each checked against its session's episodes."""
    checkers = {SUMMARY: check_summary_line, NOTE: check_note_line}
    sessions, errors = parse_transcripts(lines, extra=checkers)
    for transcript in sessions:
        reach = -1
        for number, row in transcript.extras.get(SUMMARY, []):
            if row["last_index"] >= len(transcript.episodes):
                errors.append((number, f'"last_index" is past the session\'s {len(transcript.episodes)} episodes'))
            elif row["first_index"] <= reach:
                errors.append((number, "overlaps the summary before it (rows go oldest first, no overlap)"))
            reach = max(reach, row["last_index"])
    errors.sort()
    return sessions, errors


def memory_import(
    *, owner: Any, sessions: list[ParsedTranscript], title: str | None = None
) -> list[ChatSession]:
    """Store checked sessions as new sessions of ``owner`` with their summary
    rows on the new episode ids, all or nothing (``transcript_import`` per session)."""
    created: list[ChatSession] = []
    with transaction.atomic():
        for transcript in sessions:
            session = transcript_import(owner=owner, transcript=transcript, title=title)
            rows = transcript.extras.get(SUMMARY, [])
            if rows:
                numbered = list(Episode.objects.for_session(session.pk).values_list("pk", "position"))
                imported = Summary.objects.bulk_create(
                    Summary(
                        session=session,
                        content=row["content"],
                        token_count=count_tokens(row["content"]),
                        first_episode_id=numbered[row["first_index"]][0],
                        last_episode_id=numbered[row["last_index"]][0],
                        first_position=numbered[row["first_index"]][1],
                        last_position=numbered[row["last_index"]][1],
                        curated=row["curated"],
                        model=row["model"],
                    )
                    for _, row in rows
                )
                refresh_coverage(session.pk)
                # bulk_create sends no post_save: the rows' words and vectors are asked for here.
                for row in imported:
                    transaction.on_commit(partial(queue_refresh, row.pk))
            notes = [row for _, row in transcript.extras.get(NOTE, [])]
            notes_import(owner=owner, session=session, rows=notes)
            created.append(session)
    return created
