"""On PostgreSQL an episode's vector row of up to ten vectors is kept in
the table's own pages, not in its TOAST table: a question's candidates are read
by their ids, and each row kept out of line costs more reads (migration 0015)."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection

from sessions_app.models import EpisodeVector
from sessions_app.semantic.encoder import DIMENSIONS
from sessions_app.semantic.vectors import VECTOR_BYTES, spans_to_bytes, to_bytes
from sessions_app.services import episodes_bulk_create

pytestmark = pytest.mark.django_db

TABLE = EpisodeVector._meta.db_table


def _toast_chunks() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltoastrelid::regclass::text FROM pg_class WHERE relname = %s", [TABLE])
        (toast,) = cursor.fetchone()
        cursor.execute(f"SELECT count(*) FROM {toast}")
        return cursor.fetchone()[0]


def _row(session, episode, vectors: int) -> EpisodeVector:
    matrix = np.random.default_rng(vectors).standard_normal((vectors, DIMENSIONS)).astype(np.float32)
    spans = [(n, n + 1) for n in range(vectors - 1)]
    return EpisodeVector.objects.create(
        episode_id=episode.pk, session=session, token_count=5, vector=to_bytes(matrix), spans=spans_to_bytes(spans)
    )


def test_a_row_of_a_few_passages_stays_in_the_table_and_a_long_one_goes_out_of_line(session):
    if connection.vendor != "postgresql":
        pytest.skip("about PostgreSQL's storage")
    short, long = episodes_bulk_create(
        session=session, items=[{"user_input": f"Q {n}.", "response": f"A {n}."} for n in range(2)]
    )
    before = _toast_chunks()
    _row(session, short, 10)  # 3.9 KB: past the 2 KB PostgreSQL would move out of line by default
    assert _toast_chunks() == before
    _row(session, long, 11)  # 4.3 KB: more than half a page
    assert _toast_chunks() > before
    # Both read back whole.
    stored = dict(EpisodeVector.objects.filter(session=session).values_list("episode_id", "vector"))
    assert len(bytes(stored[short.pk])) == 10 * VECTOR_BYTES
    assert len(bytes(stored[long.pk])) == 11 * VECTOR_BYTES
