"""A session's whole history as one value (``ChatSession.history_fingerprint``).

A stateless OpenAI client sends its whole conversation with every call; the
endpoint finds the session that holds exactly those exchanges by this value,
through an index, instead of reading any history. It is a chain: each stored
exchange hashes the previous value with the exchange's own digest, so every
write extends it under the session's row lock without reading what came
before, and a request's earlier messages give the same value computed the
same way.

``None`` on the session means none is kept (only sessions made by the
OpenAI endpoint keep one); ``""`` is the empty history. The SQL form leaves
``NULL`` as it is, as the Python form leaves ``None``.

Whitespace is compared collapsed: clients trim or re-wrap a reply they send
back, and that is still the same conversation.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

EMPTY = ""


def exchange_digest(user_input: str, response: str) -> str:
    """One exchange's digest: its two texts, whitespace collapsed, apart by a NUL."""
    text = " ".join(user_input.split()) + "\0" + " ".join(response.split())
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def extended(previous: str, digest: str) -> str:
    """The value after one more exchange."""
    return hashlib.sha256((previous + digest).encode("ascii")).hexdigest()


def fingerprint_after(previous: str | None, exchanges: Iterable[tuple[str, str]]) -> str | None:
    """The value after ``exchanges`` (``None`` stays ``None``: nothing is hashed, nothing read)."""
    if previous is None:
        return None
    value = previous
    for user_input, response in exchanges:
        value = extended(value, exchange_digest(user_input, response))
    return value


def history_fingerprint(exchanges: Iterable[tuple[str, str]]) -> str:
    """The value of a history held from the start: what a session holding exactly these keeps."""
    value = fingerprint_after(EMPTY, exchanges)
    assert value is not None
    return value


def extended_sql(column: str) -> str:
    """PostgreSQL's ``extended``: the column's next value, one ``%s`` for the digest."""
    return f"encode(sha256(convert_to(\"{column}\" || %s, 'UTF8')), 'hex')"
