"""The episodes of a session closest in meaning to a question.

Cost is bounded whatever the session's length, in two steps: the newest
``CONTEXT_SEMANTIC_CANDIDATES`` episodes are compared by their whole
exchange's vector, and the question's candidates alone (the episodes found
by its words and the closest by the first step, at most as many as the
ranking asks for, ``refine``) by their passages' too, read by their ids in
one query and kept with the result (``Closeness.rows``) for the context to
score their passages. The whole exchanges' vectors are kept in this process between
questions (``SessionVectors``), so a question reads only the vectors
written since the last one: one probe of the ``(session, episode)`` index,
usually returning nothing. Keeping them is safe because an episode's whole
vector changes only when its text does (a reply filled in), and that, like
a deleted exchange, raises the session's ``history_revision``: a copy kept
under another revision is read again, so no process compares a question
with the vector of an exchange that is gone.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
from django.conf import settings
from django.db import connection

from sessions_app.models import EpisodeVector
from sessions_app.semantic.encoder import encoder
from sessions_app.semantic.passage_rows import PassageRows
from sessions_app.semantic.vectors import VECTOR_BYTES, to_matrix

#: Whole-exchange vectors kept in this process, all sessions together (about 1.5 KB each).
CACHE_ROWS = 50_000
#: A question longer than this is cut before it is encoded (the encoder
#: reads 256 word pieces at most anyway).
QUESTION_CHARACTERS = 2000


@dataclass(frozen=True, slots=True)
class Neighbour:
    episode_id: int
    similarity: float
    token_count: int
    #: How far its similarity stands above the compared episodes' mean, in
    #: standard deviations: a scale that means the same in every session.
    standing: float = 0.0


@dataclass(slots=True)
class SessionVectors:
    ids: np.ndarray  # int64, oldest first
    tokens: np.ndarray  # int64
    heads: np.ndarray  # float32, one row per id: the whole exchange's vector
    #: Whose memory the session was when they were kept (its end user and
    #: scope): a copy kept under another is dropped, in every process.
    stamp: tuple[str, str] = ("", "")
    #: The session's ``history_revision`` when they were kept: a copy kept
    #: before an exchange was deleted is dropped, in every process.
    revision: int = 0

    @classmethod
    def read(cls, ids: list[int], tokens: list[int], blobs: list[bytes]) -> SessionVectors:
        """Rows read with their first vector alone (``_read(heads=True)``);
        a longer row's passages are left out."""
        matrix, per_row = to_matrix(blobs)
        starts = np.concatenate([[0], np.cumsum(per_row)[:-1]]).astype(np.int64) if len(per_row) else per_row
        return cls(np.asarray(ids, dtype=np.int64), np.asarray(tokens, dtype=np.int64), matrix[starts])

    @property
    def newest(self) -> int:
        return int(self.ids[-1]) if len(self.ids) else 0

    @property
    def size(self) -> int:
        """Vectors held."""
        return len(self.heads)

    def then(self, newer: SessionVectors, keep: int) -> SessionVectors:
        """These followed by ``newer``, the newest ``keep`` episodes of them."""
        drop = max(0, len(self.ids) + len(newer.ids) - keep)
        return SessionVectors(
            np.concatenate([self.ids, newer.ids])[drop:],
            np.concatenate([self.tokens, newer.tokens])[drop:],
            np.concatenate([self.heads, newer.heads])[drop:],
            self.stamp,
            self.revision,
        )


_cache: OrderedDict[int, SessionVectors] = OrderedDict()
_lock = threading.Lock()


def question_vector(question: str) -> np.ndarray:
    return encoder().encode([question[:QUESTION_CHARACTERS]])[0]


# The encoder runs in native code without the GIL, so a question can be
# encoded on another core while the request reads the database.
_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="nexus-encoder")


def question_vector_soon(question: str) -> Future[np.ndarray]:
    """``question_vector`` started in the background: ask for ``.result()`` when it is needed."""
    return _pool.submit(question_vector, question)


@dataclass(frozen=True, slots=True)
class Closeness:
    """How close in meaning each compared episode of a session is to a question."""

    ids: np.ndarray  # int64, oldest first
    tokens: np.ndarray  # int64
    similarity: np.ndarray  # float32, -inf for the excluded
    standing: np.ndarray  # float32, (similarity - mean) / deviation over the episodes not excluded
    heads: np.ndarray  # float32, one row per id: the whole exchange's vector
    #: The rows of the episodes compared by their passages too, for the
    #: context to score their passages without reading them again.
    rows: PassageRows = field(default_factory=lambda: PassageRows.read((), np.zeros(1, dtype=np.float32)))

    @classmethod
    def of(
        cls,
        known: SessionVectors,
        vector: np.ndarray,
        exclude_ids: Iterable[int],
        rows: PassageRows | None = None,
        whole: np.ndarray | None = None,
    ) -> Closeness:
        """``rows``: those of the episodes compared by their passages too
        (``PassageRows``). Their closeness is the mean of their whole
        exchange's and their closest vector's; the others', their whole
        exchange's. The closest alone would favour episodes with many
        passages, each one more draw at matching by chance; the whole
        exchange's half keeps the rest of the episode in the score
        (bench/retrieval_rankings.py). ``whole``: ``known.heads @ vector``
        when the caller has it already."""
        similarity = known.heads @ vector.astype(np.float32) if whole is None else whole.copy()
        passages = rows.closest_passages() if rows is not None else {}
        if passages and len(known.ids):
            wanted = np.fromiter(passages, dtype=np.int64, count=len(passages))
            closest = np.fromiter(passages.values(), dtype=np.float32, count=len(passages))
            at, found = _find(known.ids, wanted)
            at = at[found]
            similarity[at] = (similarity[at] + np.maximum(similarity[at], closest[found])) / 2
        excluded = _held(known.ids, exclude_ids)
        similarity[excluded] = -np.inf
        compared = similarity[~excluded]
        standing = np.zeros_like(similarity)
        if len(compared):
            deviation = float(compared.std())
            # One episode, or all alike: none stands out.
            if deviation > 1e-6:
                standing = (similarity - float(compared.mean())) / deviation
        if rows is None:
            return cls(known.ids, known.tokens, similarity, standing, known.heads)
        return cls(known.ids, known.tokens, similarity, standing, known.heads, rows)

    def nearest(self, limit: int) -> list[Neighbour]:
        """At most ``limit`` episodes, closest first; never an excluded one."""
        count = min(limit, int(np.isfinite(self.similarity).sum()))
        if count <= 0:
            return []
        best = np.argpartition(-self.similarity, count - 1)[:count]
        best = best[np.argsort(-self.similarity[best], kind="stable")]
        columns = (self.ids[best], self.similarity[best], self.tokens[best], self.standing[best])
        return [Neighbour(*row) for row in zip(*(column.tolist() for column in columns), strict=True)]

    def standing_of(self, episode_ids: Iterable[int]) -> dict[int, float]:
        """The standing of each of these episodes that was compared (and not excluded)."""
        wanted, at, found = self._positions(episode_ids)
        return {
            pk: float(self.standing[i])
            for pk, i, known in zip(wanted.tolist(), at.tolist(), found.tolist(), strict=True)
            if known and np.isfinite(self.similarity[i])
        }

    def vectors_of(self, episode_ids: Iterable[int]) -> np.ndarray:
        """The whole exchange's vector of each of these episodes, as rows in
        their order; a zero row for one not compared."""
        wanted, at, found = self._positions(episode_ids)
        rows = np.zeros((len(wanted), self.heads.shape[1]), dtype=np.float32)
        rows[found] = self.heads[at[found]]
        return rows

    def _positions(self, episode_ids: Iterable[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The ids asked for, where each is in ``ids`` (clamped), and whether it is there."""
        wanted = np.fromiter(episode_ids, dtype=np.int64)
        return wanted, *_find(self.ids, wanted)


def closeness(
    *,
    session_pk: int,
    newest_episode_id: int | None,
    vector: np.ndarray,
    scan: int,
    exclude_ids: Iterable[int] = (),
    also: Iterable[int] = (),
    refine: int | None = None,
    revision: int = 0,
    stamp: tuple[str, str] = ("", ""),
) -> Closeness:
    """How close to ``vector`` each of the session's newest ``scan``
    episodes with a vector is: by the whole exchange's vector, and for the
    ``refine`` closest by it (``CONTEXT_RETRIEVE_CANDIDATES`` when None) and
    the episodes in ``also`` (those the question's words found) by their
    passages' too. ``newest_episode_id`` is the session's counter: a kept
    copy newer than it belongs to an earlier session with the same id
    (SQLite reuses ids after a rollback) and is dropped, as is one kept
    under another ``revision`` (the session's ``history_revision``) or another
    ``stamp`` (the session's end user and memory scope)."""
    known = _session_vectors(session_pk, newest_episode_id, scan, revision, stamp)
    vector = vector.astype(np.float32)
    excluded = list(exclude_ids)
    count = settings.CONTEXT_RETRIEVE_CANDIDATES if refine is None else refine
    whole = known.heads @ vector
    candidates = _candidates(known, whole, excluded, also, count)
    return Closeness.of(known, vector, excluded, PassageRows.read(candidates, vector), whole)


def _candidates(
    known: SessionVectors, whole: np.ndarray, excluded: list[int], also: Iterable[int], count: int
) -> list[int]:
    """The ids compared by their passages: the ``count`` closest by their
    whole exchange's vector and those of ``also`` that were compared, none excluded."""
    allowed = ~_held(known.ids, excluded)
    ids, whole = known.ids[allowed], whole[allowed]
    count = min(count, len(ids))
    chosen = np.zeros(len(ids), dtype=bool)
    if count > 0:
        chosen[np.argpartition(-whole, count - 1)[:count]] = True
    chosen |= _held(ids, also)
    return ids[chosen].tolist()


def _held(ids: np.ndarray, wanted: Iterable[int]) -> np.ndarray:
    """Which of ``ids`` (sorted, distinct) are in ``wanted``: a mask, by binary search."""
    held = np.zeros(len(ids), dtype=bool)
    at, found = _find(ids, np.fromiter(wanted, dtype=np.int64))
    held[at[found]] = True
    return held


def _find(ids: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each of ``values`` is in ``ids`` (sorted, distinct; clamped to
    its last place when absent), and whether it is there: by binary search."""
    if not len(ids):
        return np.zeros(len(values), dtype=np.int64), np.zeros(len(values), dtype=bool)
    at = np.minimum(np.searchsorted(ids, values), len(ids) - 1)
    return at, ids[at] == values


def _session_vectors(
    session_pk: int,
    newest_episode_id: int | None,
    scan: int,
    revision: int,
    stamp: tuple[str, str] = ("", ""),
) -> SessionVectors:
    with _lock:
        kept = _cache.pop(session_pk, None)
    if kept is not None and newest_episode_id is not None and kept.newest > newest_episode_id:
        kept = None
    if kept is not None and (kept.revision != revision or kept.stamp != stamp):
        kept = None
    fresh = None
    if kept is not None:
        ids, tokens, blobs = _read(session_pk, after=kept.newest, limit=scan, newest=False, heads=True)
        if len(ids) < scan:
            fresh = SessionVectors.read(ids, tokens, blobs)
        # else more new than is compared: only the newest count, read again below
    if kept is None or fresh is None:
        known = _read_newest(session_pk, scan)
    elif not len(fresh.ids):
        known = kept  # nothing new (the usual case): no copy of the matrices
    else:
        known = kept.then(fresh, keep=scan)
    known.stamp, known.revision = stamp, revision
    with _lock:
        _cache[session_pk] = known
        while sum(v.size for v in _cache.values()) > CACHE_ROWS and len(_cache) > 1:
            _cache.popitem(last=False)
    return known


def _read_newest(session_pk: int, scan: int) -> SessionVectors:
    """The whole exchange's vector of the session's newest ``scan`` episodes:
    all that is kept of them (a fraction of the bytes of their rows)."""
    ids, tokens, blobs = _read(session_pk, after=0, limit=scan, newest=True, heads=True)
    return SessionVectors.read(ids, tokens, blobs)


def _read(
    session_pk: int,
    *,
    after: int,
    limit: int,
    newest: bool,
    upto: int = 2**63 - 1,
    heads: bool = False,
) -> tuple[list[int], list[int], list[bytes]]:
    """At most ``limit`` rows of the session with an id above ``after`` and
    at most ``upto``, oldest first: the newest of them, or (``newest=False``)
    the oldest. ``heads``: each row's first vector only (the whole exchange's).

    Row comparisons on ``(session_id, episode_id)``, ordered by both: the
    same reason as ``sessions_app.querysets.session_range`` (only that
    index serves it, never a walk of the primary key). What was written
    since the last question is read forward from where it starts: read
    backward, PostgreSQL would walk the session's whole range before
    finding there is nothing newer."""
    table = EpisodeVector._meta.db_table
    order = "DESC" if newest else "ASC"
    # substr() cuts a bytea on PostgreSQL and a blob on SQLite alike, by bytes.
    vector = f'substr("vector", 1, {VECTOR_BYTES})' if heads else '"vector"'
    sql = (
        f'SELECT "episode_id", "token_count", {vector} FROM "{table}" '
        f'WHERE ("session_id", "episode_id") > (%s, %s) AND ("session_id", "episode_id") <= (%s, %s) '
        f'ORDER BY "session_id" {order}, "episode_id" {order} LIMIT %s'
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [session_pk, after, session_pk, upto, limit])
        rows = cursor.fetchall()
    if newest:
        rows.reverse()
    return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]


def forget(session_pk: int | None = None) -> None:
    """Drop what this process keeps (of one session, or of all)."""
    with _lock:
        if session_pk is None:
            _cache.clear()
        else:
            _cache.pop(session_pk, None)
