"""The stored rows of a question's candidates, read once per question.

Retrieval compares its candidates by their passages (``neighbours.closeness``)
and the context then scores the passages of the exchanges it ranked
(``sessions_app.excerpts.passage_evidence``): both need the same rows, so
they are read once, in one query by the candidates' ids, and kept for the
question (``PassageRows``). Not through the ORM: an ``__in`` lookup
resolves each of a few hundred ids as an expression, which costs more than
the query; on PostgreSQL the ids go as one array and the rows come in the
binary format, the vectors' bytes and not their hex digits (``nexus.binary_rows``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from nexus.binary_rows import fetch_by_ids
from sessions_app.models import EpisodeVector
from sessions_app.semantic.vectors import StoredPassages, passages_of, to_matrix


@dataclass(frozen=True, slots=True)
class PassageRows:
    """The rows of the episodes ``ids`` (asked for, whether or not they have
    one) and every stored vector's cosine to the question."""

    ids: frozenset[int]
    matrix: np.ndarray  # float32, every row's vectors, one after another
    cosines: np.ndarray  # float32, each of those vectors' cosine to the question
    at: dict[int, tuple[int, int]]  # episode id -> (its first vector in matrix, how many)
    spans: dict[int, bytes | memoryview | None]

    @classmethod
    def read(cls, ids: Iterable[int], vector: np.ndarray | None) -> PassageRows:
        """``vector``: the question's (None: no cosines, the rows alone)."""
        wanted = sorted({int(pk) for pk in ids})
        rows: list[tuple[int, bytes, bytes | None]] = []
        if wanted:
            table = EpisodeVector._meta.db_table
            rows = fetch_by_ids(
                f'SELECT "episode_id", "vector", "spans" FROM "{table}"', "episode_id", wanted
            )
        matrix, counts = to_matrix([blob for _, blob, _ in rows])
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]]) if len(counts) else counts
        at = {
            pk: (int(start), int(count))
            for (pk, _, _), start, count in zip(rows, starts.tolist(), counts.tolist(), strict=True)
            if count
        }
        cosines = np.zeros(0, dtype=np.float32)
        if vector is not None and len(matrix):
            cosines = matrix @ vector.astype(np.float32)
        return cls(frozenset(wanted), matrix, cosines, at, {pk: spans for pk, _, spans in rows})

    def closest_passages(self) -> dict[int, float]:
        """Each episode's closest passage vector's cosine; absent for one without passages."""
        starts, counts = self._layout()
        with_passages = counts > 1  # the first vector is the whole exchange's
        if not with_passages.any() or not len(self.cosines):
            return {}
        # Each row's passages are its vectors after the first: the maximum over them, all rows at once.
        cosines = self.cosines.copy()
        cosines[starts] = -np.inf
        best = np.maximum.reduceat(cosines, starts)
        ids = np.fromiter(self.at, dtype=np.int64, count=len(self.at))
        return dict(zip(ids[with_passages].tolist(), best[with_passages].tolist(), strict=True))

    def _layout(self) -> tuple[np.ndarray, np.ndarray]:
        """Each read row's first vector's place in ``matrix`` and its number of vectors, in ``at``'s order."""
        places = np.array(list(self.at.values()), dtype=np.int64).reshape(-1, 2)
        return places[:, 0], places[:, 1]

    def stored(self, pk: int) -> StoredPassages | None:
        """One episode's vectors as ``vectors.stored_passages`` gives them (None: it has no row)."""
        if pk not in self.at:
            return None
        start, count = self.at[pk]
        return passages_of(self.matrix[start : start + count], self.spans.get(pk))

    def best_cosine(self, pk: int) -> float | None:
        """The highest cosine of any of the episode's vectors, whole or
        passage: -1 (the lowest a cosine can be) when it has no row; None
        when it was not read."""
        if pk not in self.ids or (pk in self.at and not len(self.cosines)):
            return None  # not read, or read without the question's vector
        if pk not in self.at:
            return -1.0
        start, count = self.at[pk]
        return float(self.cosines[start : start + count].max())
