"""Every layout vectors have been stored in, and the rewrite from one to
the next for the migrations that change it: float16 values (until
sessions_app migration 0016), then each vector's float32 scale followed by
its int8 values (``sessions_app.semantic.vectors`` stores the newest). A
new layout is added here, not written over an old one, so a migration
written for one keeps doing what it did."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from django.db.migrations import RunPython

#: A vector's values in every layout so far: the encoder's when they were
#: written (``sessions_app.semantic.encoder``), frozen with them.
DIMENSIONS = 384
FLOAT16 = np.dtype("<f2")
SCALED_INT8 = np.dtype([("scale", "<f4"), ("values", "i1", (DIMENSIONS,))])
#: The int8 values' largest magnitude, given to each vector's largest.
LEVELS = 127
#: Rows read and written at a time.
BATCH = 1000


def scaled_int8_bytes(matrix: np.ndarray) -> bytes:
    """Vectors (rows) as each one's scale and int8 values."""
    matrix = np.atleast_2d(matrix).astype(np.float32)
    stored = np.zeros(len(matrix), dtype=SCALED_INT8)
    stored["scale"] = np.abs(matrix).max(axis=1, initial=0.0) / LEVELS
    divisor = np.where(stored["scale"] > 0, stored["scale"], 1.0)  # a zero vector stays zero
    stored["values"] = np.clip(np.rint(matrix / divisor[:, None]), -LEVELS, LEVELS)
    return stored.tobytes()


def scaled_int8_matrix(blob: bytes) -> np.ndarray:
    """``scaled_int8_bytes`` read back: a float32 row per vector."""
    stored = np.frombuffer(blob, dtype=SCALED_INT8)
    matrix = stored["values"].astype(np.float32)
    matrix *= stored["scale"][:, None]
    return matrix


def float16_to_int8(blob: bytes) -> bytes:
    return scaled_int8_bytes(np.frombuffer(bytes(blob), dtype=FLOAT16).reshape(-1, DIMENSIONS))


def int8_to_float16(blob: bytes) -> bytes:
    return scaled_int8_matrix(bytes(blob)).astype(FLOAT16).tobytes()


def rewrite(model, field: str, convert) -> None:
    """Every row's ``field`` (a blob of vectors) through ``convert``, ``BATCH``
    rows at a time in primary key order (an empty blob stays empty)."""
    last = None
    while True:
        rows = model.objects.order_by("pk").values_list("pk", field)
        if last is not None:
            rows = rows.filter(pk__gt=last)
        batch = list(rows[:BATCH])
        if not batch:
            return
        model.objects.bulk_update(
            [model(pk=pk, **{field: convert(blob)}) for pk, blob in batch if blob], [field]
        )
        last = batch[-1][0]


def rewriting(app_label: str, model_name: str, field: str) -> RunPython:
    """The migration operation that rewrites the model's ``field`` from
    float16 to scaled int8, and back when the migration is reversed."""
    from django.db import migrations

    def to_int8(apps, schema_editor):
        rewrite(apps.get_model(app_label, model_name), field, float16_to_int8)

    def to_float16(apps, schema_editor):
        rewrite(apps.get_model(app_label, model_name), field, int8_to_float16)

    return migrations.RunPython(to_int8, to_float16)
