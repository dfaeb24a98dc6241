"""How vectors are stored: an episode's row holds one or more vectors
(``passages.episode_encoding``: the whole exchange first), each
``VECTOR_BYTES``: its scale as a little-endian float32, then its
``DIMENSIONS`` values as int8, the vector being the values times the
scale. A quarter of float32's bytes and half of float16's, and read back
at a quarter of float16's cost (numpy converts int8 with vector
instructions, float16 one value at a time): a question's candidates' rows
are read and converted on every context (bench/README.md, context_steps.py).
Each value is rounded to the nearest of 255 steps of its vector's range:
for the encoder's vectors (the largest value about 0.2) a cosine moves by
0.002 at most (tests/semantic/test_vector_bytes.py).

Beside them, the ``[start, end)`` of each passage's text in
``user_input + response`` as pairs of little-endian int32
(``EpisodeVector.spans``: one pair per vector after the first). Rows
written before passages were encoded hold the whole exchange's vector
alone; rows written before passages covered the whole text hold up to
seven passages of the first 2,000 characters of each side and no spans.
Both are read the same way (``stored_passages`` gives them without spans),
until the sweep encodes them again (``sessions_app.semantic.backlog``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from sessions_app.semantic.encoder import DIMENSIONS
from sessions_app.semantic.vector_layouts import SCALED_INT8, scaled_int8_bytes, scaled_int8_matrix

_SPAN = np.dtype("<i4")
VECTOR_BYTES = SCALED_INT8.itemsize


def to_bytes(vectors: np.ndarray) -> bytes:
    """One episode's vectors (a vector, or a matrix of them as rows)."""
    return scaled_int8_bytes(vectors)


def to_matrix(blobs: Sequence[bytes | memoryview]) -> tuple[np.ndarray, np.ndarray]:
    """Stored rows as one float32 matrix of all their vectors, and how many
    vectors each row holds (the matrix's rows go in the same order)."""
    if not blobs:
        return np.zeros((0, DIMENSIONS), dtype=np.float32), np.zeros(0, dtype=np.int64)
    joined = b"".join(bytes(blob) for blob in blobs)
    counts = np.fromiter((len(blob) // VECTOR_BYTES for blob in blobs), dtype=np.int64, count=len(blobs))
    return scaled_int8_matrix(joined), counts


def spans_to_bytes(spans: Iterable[tuple[int, int]]) -> bytes:
    return np.asarray(list(spans), dtype=_SPAN).reshape(-1, 2).tobytes()


def spans_of(blob: bytes | memoryview | None) -> np.ndarray:
    """Stored spans as an ``(n, 2)`` int64 array (none for an older row)."""
    return np.frombuffer(bytes(blob or b""), dtype=_SPAN).reshape(-1, 2).astype(np.int64)


@dataclass(frozen=True, slots=True)
class StoredPassages:
    """One episode's stored passage vectors (the whole exchange's left out)
    and, for a row of the current layout, each one's ``[start, end)``
    in ``user_input + response``; ``spans`` is None for an older row, whose
    vectors follow ``passages.older_layout`` (the first 2,000 characters
    of each side)."""

    whole: np.ndarray  # float32, the whole exchange's vector
    vectors: np.ndarray  # float32, one row per passage
    spans: np.ndarray | None  # int64 (n, 2), or None


def stored_passages(
    rows: Iterable[tuple[int, bytes | memoryview, bytes | memoryview | None]],
) -> dict[int, StoredPassages]:
    """``(episode_id, vector, spans)`` rows as each episode's ``StoredPassages``."""
    found = {}
    for pk, blob, span_blob in rows:
        matrix, _ = to_matrix([blob])
        if len(matrix):
            found[pk] = passages_of(matrix, span_blob)
    return found


def passages_of(matrix: np.ndarray, span_blob: bytes | memoryview | None) -> StoredPassages:
    """One episode's row, its vectors already read as ``matrix`` (at least one)."""
    spans = spans_of(span_blob)
    passages = matrix[1:]
    return StoredPassages(matrix[0], passages, spans if len(spans) == len(passages) and len(spans) else None)
