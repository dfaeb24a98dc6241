"""The whole-exchange vectors of a person's shared sessions, kept in this
process between questions: for the person's memory
(``sessions_app.shared_memory``) what ``neighbours.SessionVectors`` is for
one session.

Compared: the newest exchanges of the person's most recently active other
shared sessions, ``CONTEXT_SEMANTIC_CANDIDATES`` in all (one session
compares as many of its own), from at most ``CONTEXT_RETRIEVE_CANDIDATES``
sessions: taken newest first by their episode counters until the cap is
reached, the last one for what is left of it.

Every question reads the person's sessions first (``listed``: one query on
the ``(owner, end_user, memory_scope)`` index, small columns only), and that
list is what proves a kept copy current, in every process, without any
message between them: a session no longer listed (deleted, made
session-scoped, given to another end user, no longer among the newest) is
dropped; one whose ``history_revision`` moved (an exchange deleted, a reply
filled in) or whose uuid differs (SQLite may give a deleted session's id
again) is read again; one whose ``encoded_through_position`` moved has new
vectors, read from where its kept copy ends. A question with nothing new
reads the list alone. What is read is read in one query of ranges of the
``(session, episode)`` index, one per session (as ``neighbours._read``), so no
plan walks the person's episodes; each range also names the person (owner,
end user, shared), so a row of a session that stopped being theirs since the
list was read is never returned.
"""

from __future__ import annotations

import threading
import uuid as uuid_module
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np
from django.conf import settings
from django.db import connection

from sessions_app.models import ChatSession, EpisodeVector, MemoryScope
from sessions_app.semantic.encoder import DIMENSIONS
from sessions_app.semantic.neighbours import CACHE_ROWS, SessionVectors
from sessions_app.semantic.vectors import VECTOR_BYTES

__all__ = ["Compared", "compared", "forget"]

_HIGHEST = 2**63 - 1


@dataclass(frozen=True, slots=True)
class Compared:
    """The exchanges compared by meaning, oldest first within each session."""

    ids: np.ndarray  # int64
    tokens: np.ndarray  # int64
    heads: np.ndarray  # float32, one row per id
    sessions: np.ndarray  # int64, each id's session

    @classmethod
    def empty(cls) -> Compared:
        none = np.zeros(0, dtype=np.int64)
        return cls(none, none, np.zeros((0, DIMENSIONS), dtype=np.float32), none)

    def __len__(self) -> int:
        return len(self.ids)


@dataclass(frozen=True, slots=True)
class _Listed:
    """A session's row as the list reads it."""

    pk: int
    uuid: uuid_module.UUID
    revision: int
    encoded: int
    take: int  # how many of its newest exchanges are compared
    count: int  # its exchanges (``cached_episode_count``), at least its vectors

    def whole(self, read: int) -> bool:
        """Whether ``read`` rows of a range asked for ``take`` are all its vectors."""
        return read < self.take or self.take >= self.count


@dataclass(frozen=True, slots=True)
class _Kept:
    listed: _Listed
    vectors: SessionVectors
    #: Holds every vector of the session up to its newest (none older left out).
    whole: bool

    def serves(self, row: _Listed) -> bool:
        return self.whole or self.vectors.size >= row.take


@dataclass(slots=True)
class _Person:
    sessions: dict[int, _Kept]
    layout: tuple[tuple[int, int], ...] = ()
    combined: Compared | None = None
    #: Vectors held: its sessions never change once it is built, so counted once (the trim reads it often).
    size: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.size = sum(kept.vectors.size for kept in self.sessions.values())


_cache: OrderedDict[tuple[int, str], _Person] = OrderedDict()
_lock = threading.Lock()


def compared(*, owner_id: int, end_user: str, asking_pk: int) -> Compared:
    """The vectors the person's other shared sessions (all but ``asking_pk``)
    compare with a question (module docstring)."""
    key = (owner_id, end_user)
    rows, asking_listed = listed(owner_id=owner_id, end_user=end_user, asking_pk=asking_pk)
    with _lock:
        person = _cache.pop(key, None) or _Person({})
    kept = {row.pk: person.sessions.get(row.pk) for row in rows}
    usable = {
        row.pk: k
        for row in rows
        if (k := kept[row.pk]) is not None
        and k.listed.uuid == row.uuid
        and k.listed.revision == row.revision
        and k.listed.encoded <= row.encoded
        and k.serves(row)
    }
    newer = [row for row in rows if row.pk in usable and usable[row.pk].listed.encoded < row.encoded]
    cold = [row for row in rows if row.pk not in usable]
    read = _read(owner_id, end_user, cold=cold, newer=[(row, usable[row.pk].vectors.newest) for row in newer])
    fresh: dict[int, _Kept] = {}
    again: list[_Listed] = []
    for row in cold:
        got = read.get(row.pk) or SessionVectors.read([], [], [])
        fresh[row.pk] = _Kept(row, got, row.whole(got.size))
    for row in newer:
        got = read.get(row.pk) or SessionVectors.read([], [], [])
        if got.size >= row.take:  # more new than is compared: only the newest, read again below
            again.append(row)
            continue
        before = usable[row.pk]
        joined = before.vectors.then(got, keep=max(row.take, before.vectors.size))
        fresh[row.pk] = _Kept(row, joined, before.whole and joined.size == before.vectors.size + got.size)
    if again:
        for pk, got in _read(owner_id, end_user, cold=again, newer=[]).items():
            row = next(row for row in again if row.pk == pk)
            fresh[pk] = _Kept(row, got, row.whole(got.size))
        for row in again:
            fresh.setdefault(row.pk, _Kept(row, SessionVectors.read([], [], []), True))
    sessions = {row.pk: fresh.get(row.pk) or usable[row.pk] for row in rows}
    if asking_listed and asking_pk in person.sessions:
        # Kept for the person's other chats, which compare it: checked like any when they ask.
        sessions[asking_pk] = person.sessions[asking_pk]
    layout = tuple((row.pk, row.take) for row in rows)
    if fresh or layout != person.layout or person.combined is None:
        person = _Person(sessions, layout, _combine(rows, sessions))
    else:
        person = _Person(sessions, layout, person.combined)
    with _lock:
        _cache[key] = person
        while sum(p.size for p in _cache.values()) > CACHE_ROWS and len(_cache) > 1:
            _cache.popitem(last=False)
    return person.combined


def listed(*, owner_id: int, end_user: str, asking_pk: int) -> tuple[list[_Listed], bool]:
    """The person's other shared sessions whose newest exchanges are
    compared, most recently active first, and how many of each; and whether
    the asking session is one of the person's shared sessions too."""
    cap = settings.CONTEXT_SEMANTIC_CANDIDATES
    rows = (
        ChatSession.objects.filter(owner_id=owner_id, end_user=end_user, memory_scope=MemoryScope.SHARED)
        .order_by("-updated_at", "-pk")
        .values_list("pk", "uuid", "history_revision", "encoded_through_position", "cached_episode_count")
    )[: settings.CONTEXT_RETRIEVE_CANDIDATES + 1]
    chosen: list[_Listed] = []
    used, asking = 0, False
    for pk, uuid, revision, encoded, count in rows:
        if pk == asking_pk:  # listed too, so that what is kept of it for the others is not dropped
            asking = True
            continue
        take = min(count, cap - used)
        if take > 0 and len(chosen) < settings.CONTEXT_RETRIEVE_CANDIDATES:
            chosen.append(_Listed(pk, uuid, revision, encoded, take, count))
            used += take
    return chosen, asking


def _read(
    owner_id: int, end_user: str, *, cold: list[_Listed], newer: list[tuple[_Listed, int]]
) -> dict[int, SessionVectors]:
    """In one query: the newest ``take`` vectors of each ``cold`` session, and
    of each ``newer`` one the oldest ``take`` after the episode id given (read
    forward: see ``neighbours._read``); session id -> its vectors, oldest first."""
    if not cold and not newer:
        return {}
    table, chat = EpisodeVector._meta.db_table, ChatSession._meta.db_table
    person = (
        f'EXISTS (SELECT 1 FROM "{chat}" s WHERE s."id" = %s AND s."owner_id" = %s'
        f' AND s."end_user" = %s AND s."memory_scope" = %s)'
    )
    branches, params = [], []
    # SQLite takes no LIMIT in a branch of a compound, PostgreSQL none without
    # parentheses: a subquery in FROM suits both.
    for n, (row, after, order) in enumerate(
        [(row, 0, "DESC") for row in cold] + [(row, after, "ASC") for row, after in newer]
    ):
        branches.append(
            f'SELECT * FROM (SELECT v."session_id", v."episode_id", v."token_count",'
            f' substr(v."vector", 1, {VECTOR_BYTES}) FROM "{table}" v'
            f' WHERE (v."session_id", v."episode_id") > (%s, %s)'
            f' AND (v."session_id", v."episode_id") <= (%s, %s) AND {person}'
            f' ORDER BY v."session_id" {order}, v."episode_id" {order} LIMIT %s) AS b{n}'
        )
        params += [row.pk, after, row.pk, _HIGHEST]
        params += [row.pk, owner_id, end_user, MemoryScope.SHARED.value, row.take]
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(branches), params)
        rows = sorted(cursor.fetchall(), key=lambda r: (r[0], r[1]))
    found: dict[int, tuple[list[int], list[int], list[bytes]]] = {}
    for session_pk, episode_pk, tokens, head in rows:
        ids, counts, blobs = found.setdefault(session_pk, ([], [], []))
        ids.append(episode_pk)
        counts.append(tokens)
        blobs.append(bytes(head))
    return {pk: SessionVectors.read(*columns) for pk, columns in found.items()}


def _combine(rows: list[_Listed], sessions: dict[int, _Kept]) -> Compared:
    """The kept copies as one matrix, each session's newest ``take``."""
    parts = [(row.pk, sessions[row.pk].vectors, row.take) for row in rows if sessions[row.pk].vectors.size]
    if not parts:
        return Compared.empty()
    return Compared(
        np.concatenate([vectors.ids[-take:] for _, vectors, take in parts]),
        np.concatenate([vectors.tokens[-take:] for _, vectors, take in parts]),
        np.concatenate([vectors.heads[-take:] for _, vectors, take in parts]),
        np.concatenate([np.full(min(take, vectors.size), pk, dtype=np.int64) for pk, vectors, take in parts]),
    )


def forget() -> None:
    """Drop what this process keeps of every person."""
    with _lock:
        _cache.clear()
