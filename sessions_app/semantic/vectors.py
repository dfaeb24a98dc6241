"""How vectors are stored: an episode's row holds one or more vectors
(``passages.episode_texts``: the whole exchange first), each ``DIMENSIONS``
float16 values, little-endian, one after another. Rows written before
passages were encoded hold the whole exchange's vector alone, and are read
the same way."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sessions_app.semantic.encoder import DIMENSIONS

_STORED = np.dtype("<f2")
VECTOR_BYTES = DIMENSIONS * _STORED.itemsize


def to_bytes(vectors: np.ndarray) -> bytes:
    """One episode's vectors (a vector, or a matrix of them as rows)."""
    return np.atleast_2d(vectors).astype(_STORED).tobytes()


def to_matrix(blobs: Sequence[bytes | memoryview]) -> tuple[np.ndarray, np.ndarray]:
    """Stored rows as one float32 matrix of all their vectors, and how many
    vectors each row holds (the matrix's rows go in the same order)."""
    if not blobs:
        return np.zeros((0, DIMENSIONS), dtype=np.float32), np.zeros(0, dtype=np.int64)
    joined = b"".join(bytes(blob) for blob in blobs)
    counts = np.fromiter((len(blob) // VECTOR_BYTES for blob in blobs), dtype=np.int64, count=len(blobs))
    matrix = np.frombuffer(joined, dtype=_STORED).reshape(-1, DIMENSIONS).astype(np.float32)
    return matrix, counts
