"""Stored vectors rewritten from one layout to another, for the migrations
that change it: float16 values, and each vector's float32 scale followed
by its int8 values (``sessions_app.semantic.vectors``). Frozen here as they
were when those migrations were written, so a later change of the live
layout does not change what they do."""

from __future__ import annotations

import numpy as np
from django.db import migrations

DIMENSIONS = 384
FLOAT16 = np.dtype("<f2")
SCALED_INT8 = np.dtype([("scale", "<f4"), ("values", "i1", (DIMENSIONS,))])
LEVELS = 127
#: Rows read and written at a time.
BATCH = 1000


def float16_to_int8(blob: bytes) -> bytes:
    matrix = np.frombuffer(bytes(blob), dtype=FLOAT16).reshape(-1, DIMENSIONS).astype(np.float32)
    stored = np.zeros(len(matrix), dtype=SCALED_INT8)
    stored["scale"] = np.abs(matrix).max(axis=1, initial=0.0) / LEVELS
    divisor = np.where(stored["scale"] > 0, stored["scale"], 1.0)
    stored["values"] = np.clip(np.rint(matrix / divisor[:, None]), -LEVELS, LEVELS)
    return stored.tobytes()


def int8_to_float16(blob: bytes) -> bytes:
    stored = np.frombuffer(bytes(blob), dtype=SCALED_INT8)
    return (stored["values"].astype(np.float32) * stored["scale"][:, None]).astype(FLOAT16).tobytes()


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


def rewriting(app_label: str, model_name: str, field: str) -> migrations.RunPython:
    """The migration operation that rewrites the model's ``field`` from
    float16 to scaled int8, and back when the migration is reversed."""

    def to_int8(apps, schema_editor):
        rewrite(apps.get_model(app_label, model_name), field, float16_to_int8)

    def to_float16(apps, schema_editor):
        rewrite(apps.get_model(app_label, model_name), field, int8_to_float16)

    return migrations.RunPython(to_int8, to_float16)
