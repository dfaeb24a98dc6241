"""Sessions as JSON lines, in and out (``export_session`` / ``import_transcript``).

Format ``nexus-transcript/2`` (UTF-8, one JSON object per line):

- an optional header, first: ``{"type": "session", "format": "nexus-transcript/2",
  "id": uuid, "title", "owner", "created_at", "metadata", "end_user", "memory_scope",
  "episode_count", "total_tokens"}``; an import takes the title, metadata, end user and
  memory scope from it (``"session"`` and no end user when absent) and ignores the rest;
- then one line per episode, oldest first: ``{"position", "user_input",
  "response", "created_at", "metadata"}``. ``user_input`` and ``response``
  are required strings, as the API takes them (``user_input`` not empty,
  ``response`` may be); ``created_at`` (ISO 8601; without an offset, UTC)
  and ``metadata`` (an object) are optional; other keys are ignored. Dates
  are checked as every write checks them (``created_at_problems``: from
  1970, not in the future, not going back), each problem named by its line.
  Blank lines are skipped.

``position`` is the exchange's number in the exported session (``#12``;
a deleted exchange leaves a gap). It is informational: an imported session
numbers its episodes anew from 1, in the order of the lines, and the
importer does not read it. ``nexus-transcript/1`` is the same without
positions; the importer reads both, and refuses a header that names any
other format.

A file may hold many sessions: each header line starts the next one. Lines
of other types are refused, unless the caller names a checker for their
type (``extra``): ``summaries`` adds its summary lines that way, since
this app knows nothing of summaries.

An export is a valid import, so a session can be copied between instances.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import islice
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from sessions_app.errors import EpisodeDateInvalid
from sessions_app.models import END_USER_MAX_CHARS, ChatSession, Episode, MemoryScope
from sessions_app.services import episodes_bulk_create, session_create
from sessions_app.shown_metadata import shown
from sessions_app.validation import created_at_problems, episode_problems, metadata_problem, text_problem

FORMAT = "nexus-transcript/2"
#: The formats the importer reads (a header may also name none).
READABLE_FORMATS = frozenset({"nexus-transcript/1", FORMAT})
#: Episodes read (and their metadata rendered) at once by an export.
EXPORT_CHUNK = 1000


# --- out -------------------------------------------------------------------------


def session_header(session: ChatSession) -> dict[str, Any]:
    return {
        "type": "session",
        "format": FORMAT,
        "id": str(session.uuid),
        "title": session.title,
        "owner": session.owner.get_username(),
        "created_at": session.created_at.isoformat(),
        "metadata": session.metadata,
        "end_user": session.end_user,
        "memory_scope": session.memory_scope,
        "episode_count": session.cached_episode_count,
        "total_tokens": session.cached_total_tokens,
    }


def export_lines(session: ChatSession, *, ids: list[int] | None = None) -> Iterator[str]:
    """The session as JSON lines (without newlines): header, then every
    episode oldest first, read in chunks so a long session stays cheap.
    ``ids``, when given, receives each exported episode's id in line order."""
    yield json.dumps(session_header(session), ensure_ascii=False)
    episodes = (
        Episode.objects.for_session(session.pk)
        .values("id", "position", "user_input", "response", "created_at", "metadata")
        .iterator(chunk_size=EXPORT_CHUNK)
    )
    while chunk := list(islice(episodes, EXPORT_CHUNK)):
        # Metadata as readers are shown it: an offline reply's quotes as text, since
        # the ids they are kept by name nothing in the session an import makes.
        rendered = shown([(session.pk, row["metadata"]) for row in chunk])
        for row, metadata in zip(chunk, rendered, strict=True):
            episode_id = row.pop("id")
            if ids is not None:
                ids.append(episode_id)
            row["created_at"] = row["created_at"].isoformat()
            row["metadata"] = metadata
            yield json.dumps(row, ensure_ascii=False)


# --- in --------------------------------------------------------------------------


@dataclass
class ParsedTranscript:
    title: str = ""
    metadata: dict = field(default_factory=dict)
    end_user: str = ""
    memory_scope: str = MemoryScope.SESSION
    episodes: list[dict[str, Any]] = field(default_factory=list)
    # The line number (from 1) of each of ``episodes``.
    episode_lines: list[int] = field(default_factory=list)
    errors: list[tuple[int, str]] = field(default_factory=list)
    # (line number, what the checker made of it), per type named in ``extra``.
    extras: dict[str, list[tuple[int, Any]]] = field(default_factory=dict)




def _metadata(obj: dict) -> dict:
    value = obj.get("metadata")
    if value is None:
        return {}
    problem = metadata_problem(value)
    if problem:
        raise ValueError(f'"metadata": {problem}')
    return value


def _created_at(obj: dict) -> datetime | None:
    raw = obj.get("created_at")
    if raw is None:
        return None
    try:
        parsed = parse_datetime(raw) if isinstance(raw, str) else None
    except ValueError:  # shaped like a date, but e.g. month 13
        parsed = None
    if parsed is None:
        raise ValueError('"created_at" must be an ISO 8601 date and time')
    return parsed if timezone.is_aware(parsed) else parsed.replace(tzinfo=UTC)


def _json_lines(lines: Iterable[bytes], errors: list[tuple[int, str]]) -> Iterator[tuple[int, dict]]:
    """Each non-blank line's object with its number (from 1); problems go to ``errors``."""
    for number, raw in enumerate(lines, start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            errors.append((number, "not valid UTF-8"))
            continue
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            errors.append((number, f"not valid JSON ({exc.msg})"))
            continue
        except ValueError as exc:  # e.g. an integer of more digits than Python converts
            errors.append((number, f"not valid JSON ({exc})"))
            continue
        except RecursionError:
            errors.append((number, "not valid JSON (nested too deeply)"))
            continue
        if not isinstance(obj, dict):
            errors.append((number, "not a JSON object"))
            continue
        yield number, obj


def _check_format(header: dict) -> None:
    fmt = header.get("format")
    if fmt is not None and (not isinstance(fmt, str) or fmt not in READABLE_FORMATS):
        readable = " and ".join(sorted(READABLE_FORMATS))
        raise ValueError(f'unknown "format" {fmt!r}: this version reads {readable}')


def _title(header: dict) -> str:
    title = header.get("title") or ""
    if not isinstance(title, str):
        return ""
    problem = text_problem(title)
    if problem:
        raise ValueError(f'"title": {problem}')
    return title


def _whose(header: dict) -> tuple[str, str]:
    """The header's end user and memory scope, checked as the API checks them."""
    end_user, scope = header.get("end_user", ""), header.get("memory_scope", MemoryScope.SESSION)
    if not isinstance(end_user, str) or len(end_user) > END_USER_MAX_CHARS or text_problem(end_user):
        raise ValueError(f'"end_user" must be text of at most {END_USER_MAX_CHARS} characters')
    if scope not in MemoryScope.values:
        raise ValueError(f'"memory_scope" must be one of {", ".join(MemoryScope.values)}')
    return end_user, scope


def _date_errors(transcript: ParsedTranscript, *, now: datetime) -> list[tuple[int, str]]:
    """The episodes' dates as every write checks them (``created_at_problems``), by line number."""
    problems = created_at_problems([e["created_at"] for e in transcript.episodes], now=now)
    lines = transcript.episode_lines
    return [(lines[index], f'"created_at": {problem}') for index, problem in problems.items()]


def _episode(obj: dict) -> dict[str, Any]:
    """An episode line's fields, checked as every write of episodes checks them
    (``episode_problems``); ``ValueError`` names the first bad one."""
    for key in ("user_input", "response"):
        if key not in obj:
            raise ValueError(f'"{key}" is missing')
    metadata = obj.get("metadata")
    problems = episode_problems(user_input=obj["user_input"], response=obj["response"], metadata=metadata)
    for key in ("user_input", "response", "metadata"):
        if key in problems:
            raise ValueError(f'"{key}": {problems[key]}')
    return {
        "user_input": obj["user_input"],
        "response": obj["response"],
        "metadata": metadata or {},
        "created_at": _created_at(obj),
    }


def parse_transcripts(
    lines: Iterable[bytes], *, extra: Mapping[str, Callable[[dict], Any]] | None = None
) -> tuple[list[ParsedTranscript], list[tuple[int, str]]]:
    """The sessions of a file (each header starts one; lines before the first
    header make one too) and every problem with its line number (from 1).

    ``extra``: type -> checker for other line types; a checker returns what
    to keep (in ``ParsedTranscript.extras``) or raises ``ValueError``.
    """
    extra = extra or {}
    errors: list[tuple[int, str]] = []
    sessions: list[ParsedTranscript] = []
    current: ParsedTranscript | None = None
    for number, obj in _json_lines(lines, errors):
        kind = obj.get("type", "episode")
        if kind == "session" or current is None:
            current = ParsedTranscript()
            sessions.append(current)
        try:
            if kind == "session":
                _check_format(obj)
                current.title = _title(obj)
                current.metadata = _metadata(obj)
                current.end_user, current.memory_scope = _whose(obj)
            elif kind == "episode":
                current.episodes.append(_episode(obj))
                current.episode_lines.append(number)
            elif isinstance(kind, str) and kind in extra:
                current.extras.setdefault(kind, []).append((number, extra[kind](obj)))
            else:
                raise ValueError(f'unexpected "type": {kind!r}')
        except ValueError as exc:
            errors.append((number, str(exc)))
    now = timezone.now()
    for transcript in sessions:
        errors.extend(_date_errors(transcript, now=now))
    errors.sort()
    for transcript in sessions:
        transcript.errors = errors
    return sessions, errors


def parse_transcript(lines: Iterable[bytes]) -> ParsedTranscript:
    """One session's transcript, as ``parse_transcripts`` checks it; a file
    holding more than one session is a problem of the second header's line."""
    sessions, errors = parse_transcripts(lines)
    if not sessions:
        return ParsedTranscript(errors=errors)
    first = sessions[0]
    if len(sessions) > 1:
        first.errors = [*errors, (0, "more than one session")]
    return first


def transcript_import(*, owner: Any, transcript: ParsedTranscript, title: str | None = None) -> ChatSession:
    """Store a checked transcript as a new session, all or nothing.

    The episodes go through ``episodes_bulk_create`` (counters in the same
    transaction, ids in order, one summarization request for the whole
    batch after commit), so a long transcript is summarized in the
    background exactly like live traffic. Original timestamps are kept.
    """
    if transcript.errors:
        raise ValueError("the transcript has bad lines")
    with transaction.atomic():
        session = session_create(
            owner=owner,
            title=(title if title is not None else transcript.title)[:200],
            metadata=transcript.metadata,
            end_user=transcript.end_user,
            memory_scope=transcript.memory_scope,
        )
        items = [
            {
                "user_input": e["user_input"],
                "response": e["response"],
                "metadata": e["metadata"],
                "created_at": e["created_at"],
            }
            for e in transcript.episodes
        ]
        try:
            episodes_bulk_create(session=session, items=items)
        except EpisodeDateInvalid as exc:
            raise ValueError(f'episode {exc.position + 1}: "created_at" {exc}') from exc
    return session
