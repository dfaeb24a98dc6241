"""What an episode or session may hold, checked without any HTTP framework.

Text that PostgreSQL cannot store (NUL characters, lone surrogates from
``\\ud800``-style JSON escapes), text longer than ``EPISODE_MAX_CHARS``,
oversized metadata and batches over ``API_BULK_MAX_EPISODES`` are refused
before they reach the database driver. Each check returns the problem as a
sentence (``None`` when there is none), so every caller words its error its
own way: the API's validators (``sessions_app.api.validators``) as a 400
naming the field, ``/v1/chat/completions`` naming the parameter, the
transcript import with the line number. Every path that writes episodes
checks them here (``episode_problems``, ``batch_problem``), so whatever one
path stores another can take back (an export always imports).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from django.conf import settings


def is_storable_text(text: str) -> bool:
    """No null character and no lone surrogate (which UTF-8 cannot encode)."""
    if "\x00" in text:
        return False
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def storable(text: str) -> str:
    """``text`` with what the database cannot store (a null character, a
    lone surrogate) replaced by U+FFFD, the replacement character: for text
    Nexus did not receive from a caller it can refuse (a model's reply)."""
    if is_storable_text(text):
        return text
    return "".join("\ufffd" if c == "\x00" or "\ud800" <= c <= "\udfff" else c for c in text)


def text_problem(value: str) -> str | None:
    """Why the database cannot store ``value``, or ``None``."""
    if is_storable_text(value):
        return None
    if "\x00" in value:
        return "Null characters are not allowed."
    return "Text must be valid Unicode (no lone surrogates)."


def strings_problem(value: Any) -> str | None:
    """The first string (or object key) inside ``value`` the database cannot store, as its problem."""
    if isinstance(value, str):
        return text_problem(value)
    if isinstance(value, dict):
        for key, item in value.items():
            problem = text_problem(key) or strings_problem(item)
            if problem:
                return problem
    elif isinstance(value, list):
        for item in value:
            problem = strings_problem(item)
            if problem:
                return problem
    return None


def depth_problem(value: Any, *, limit: int) -> str | None:
    """Whether ``value`` nests objects and arrays deeper than ``limit`` levels
    (walked without recursion, so any depth the parser let through is safe here)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return f"At most {limit} levels of nested objects and arrays."
        stack.extend((child, depth + 1) for child in children)
    return None


def metadata_problem(value: Any) -> str | None:
    """Why ``value`` is not acceptable metadata (a JSON object of bounded
    size and depth, numbers within double range, strings the database can
    store), or ``None``."""
    if not isinstance(value, dict):
        return "Must be a JSON object."
    problem = depth_problem(value, limit=settings.JSON_MAX_DEPTH) or strings_problem(value)
    if problem:
        return problem
    try:
        encoded = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except ValueError:  # 1e309 parses as inf; JSON (and jsonb) has no infinity nor NaN
        return "Numbers must be finite (within double range)."
    size = len(encoded.encode("utf-8"))
    if size > settings.API_METADATA_MAX_BYTES:
        return f"At most {settings.API_METADATA_MAX_BYTES} bytes of JSON (got {size})."
    return None


def episode_text_problem(value: Any, *, allow_empty: bool = False) -> str | None:
    """Why ``value`` cannot be an episode's ``user_input`` (``allow_empty``
    false) or ``response`` (may be empty), or ``None``: a string of at most
    ``EPISODE_MAX_CHARS`` characters the database can store. Whitespace
    counts as written."""
    if not isinstance(value, str):
        return "Must be a string."
    if not value and not allow_empty:
        return "Must not be empty."
    limit = settings.EPISODE_MAX_CHARS
    if len(value) > limit:
        return f"At most {limit} characters (got {len(value)})."
    return text_problem(value)


def episode_problems(*, user_input: Any, response: Any, metadata: Any = None) -> dict[str, str]:
    """Field name -> problem for one episode to store (empty when it may be
    stored); ``metadata`` ``None`` means none given. Dates are checked by
    ``created_at_problems``, since they depend on the episodes around them."""
    problems: dict[str, str] = {}
    if problem := episode_text_problem(user_input):
        problems["user_input"] = problem
    if problem := episode_text_problem(response, allow_empty=True):
        problems["response"] = problem
    if metadata is not None and (problem := metadata_problem(metadata)):
        problems["metadata"] = problem
    return problems


def batch_problem(count: int) -> str | None:
    """Why ``count`` episodes cannot be stored in one call, or ``None``:
    at least one and at most ``API_BULK_MAX_EPISODES``. (An import of a
    whole exported session by the operator's command is one file, not a
    call, and takes any number.)"""
    limit = settings.API_BULK_MAX_EPISODES
    if count < 1:
        return "Send at least one episode."
    if count > limit:
        return f"At most {limit} episodes per request (got {count})."
    return None


#: The earliest date an episode may carry. Python cannot represent a UTC
#: time before year 1 (``0001-01-01T00:00:00+14:00`` is one), which
#: PostgreSQL stores and then every read of the row fails on; no
#: conversation worth importing predates the epoch anyway.
EARLIEST_CREATED_AT = datetime(1970, 1, 1, tzinfo=UTC)


def created_at_problems(dates: list[datetime | None], *, now: datetime) -> dict[int, str]:
    """Position -> problem for the dates (aware) of a batch of episodes
    written in this order: none before ``EARLIEST_CREATED_AT``, none in the
    future, none earlier than the one before it (those without a date get
    ``now``, so nothing dated may follow them). Whether the first comes after
    what the session holds is checked where the session's row is locked
    (``sessions_app.services``). Every path that stores a date calls this."""
    problems: dict[int, str] = {}
    previous: datetime | None = None
    for position, value in enumerate(dates):
        effective = now if value is None else value
        if value is not None and value < EARLIEST_CREATED_AT:
            problems[position] = "Must not be before 1970-01-01T00:00:00Z."
            continue
        if value is not None and value > now:
            problems[position] = "Must not be in the future."
        elif previous is not None and effective < previous:
            problems[position] = "Must not be earlier than the episode before it."
        previous = effective if previous is None else max(previous, effective)
    return problems
