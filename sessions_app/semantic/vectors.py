"""How vectors are stored: float16, little-endian, ``DIMENSIONS`` values."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sessions_app.semantic.encoder import DIMENSIONS

_STORED = np.dtype("<f2")


def to_bytes(vector: np.ndarray) -> bytes:
    return vector.astype(_STORED).tobytes()


def to_matrix(blobs: Sequence[bytes | memoryview]) -> np.ndarray:
    """Stored vectors as the rows of one float32 matrix."""
    if not blobs:
        return np.zeros((0, DIMENSIONS), dtype=np.float32)
    joined = b"".join(bytes(blob) for blob in blobs)
    return np.frombuffer(joined, dtype=_STORED).reshape(len(blobs), DIMENSIONS).astype(np.float32)
