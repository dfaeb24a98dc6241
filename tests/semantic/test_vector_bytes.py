"""The stored layout of vectors (``sessions_app.semantic.vectors``): each
vector's scale and int8 values, what a cosine loses to it, and the
migration that rewrote the float16 rows before it."""

from __future__ import annotations

import numpy as np
import pytest

from sessions_app.semantic.encoder import DIMENSIONS, encoder
from sessions_app.semantic.vector_layouts import float16_to_int8, int8_to_float16
from sessions_app.semantic.vectors import VECTOR_BYTES, to_bytes, to_matrix

SUBJECTS = ("the staging database", "my sister's wedding", "the invoice for March", "a sourdough starter")
ASKS = ("When did we move {}?", "Remind me what you said about {}.", "Is {} ready yet?")


def _encoded() -> np.ndarray:
    texts = [ask.format(subject) for subject in SUBJECTS for ask in ASKS]
    return encoder().encode(texts)


def test_a_vector_takes_its_values_as_bytes_and_a_scale():
    matrix = np.random.default_rng(3).standard_normal((5, DIMENSIONS)).astype(np.float32)
    assert VECTOR_BYTES == DIMENSIONS + 4
    assert len(to_bytes(matrix)) == 5 * VECTOR_BYTES and len(to_bytes(matrix[0])) == VECTOR_BYTES
    read, counts = to_matrix([to_bytes(matrix[:2]), to_bytes(matrix[2:])])
    assert counts.tolist() == [2, 3] and read.dtype == np.float32
    # Within half a step of each vector's own range: its largest value / 127.
    steps = np.abs(matrix).max(axis=1, keepdims=True) / 127
    assert (np.abs(read - matrix) <= steps / 2 + 1e-7).all()


def test_a_zero_vector_stays_zero():
    blob = to_bytes(np.zeros((2, DIMENSIONS), dtype=np.float32))
    read, _ = to_matrix([blob])
    assert not read.any() and np.isfinite(read).all()


def test_the_encoders_cosines_move_by_two_thousandths_at_most():
    vectors = _encoded()
    stored, _ = to_matrix([to_bytes(vectors)])
    exact = vectors @ vectors.T
    assert np.abs(stored @ vectors.T - exact).max() <= 0.002
    assert np.abs(stored @ stored.T - exact).max() <= 0.004  # both sides stored
    # The nearest of each stays the nearest.
    np.fill_diagonal(exact, -1)
    rounded = stored @ vectors.T
    np.fill_diagonal(rounded, -1)
    assert (rounded.argmax(axis=1) == exact.argmax(axis=1)).all()


def test_the_migration_writes_float16_rows_as_the_live_layout_and_back():
    vectors = _encoded()
    float16 = vectors.astype("<f2")
    rewritten = float16_to_int8(float16.tobytes())
    assert rewritten == to_bytes(float16.astype(np.float32))
    back = np.frombuffer(int8_to_float16(rewritten), dtype="<f2").reshape(-1, DIMENSIONS)
    assert back.shape == vectors.shape
    assert np.abs(back.astype(np.float32) - vectors).max() < 0.002


def test_the_migration_keeps_an_empty_row_empty_and_a_zero_vector_zero():
    assert float16_to_int8(b"") == b""
    zero = float16_to_int8(np.zeros(DIMENSIONS, dtype="<f2").tobytes())
    assert len(zero) == VECTOR_BYTES and not to_matrix([zero])[0].any()


@pytest.mark.django_db
def test_the_migration_rewrites_every_row_batch_by_batch(session, monkeypatch):
    from sessions_app import services
    from sessions_app.models import EpisodeVector
    from sessions_app.semantic import vector_layouts

    episodes = services.episodes_bulk_create(
        session=session, items=[{"user_input": f"Q {n}.", "response": f"A {n}."} for n in range(5)]
    )
    matrices = {
        episode.pk: np.random.default_rng(n).standard_normal((n + 1, DIMENSIONS)).astype("<f2")
        for n, episode in enumerate(episodes)
    }
    EpisodeVector.objects.bulk_create(
        EpisodeVector(episode_id=pk, session=session, token_count=3, vector=matrix.tobytes())
        for pk, matrix in matrices.items()
    )
    monkeypatch.setattr(vector_layouts, "BATCH", 2)
    vector_layouts.rewrite(EpisodeVector, "vector", float16_to_int8)
    stored = dict(EpisodeVector.objects.values_list("episode_id", "vector"))
    assert {pk: bytes(blob) for pk, blob in stored.items()} == {
        pk: to_bytes(matrix.astype(np.float32)) for pk, matrix in matrices.items()
    }


@pytest.mark.django_db(transaction=True)
def test_the_migration_reverses_to_float16_and_forward_again(session):
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    from sessions_app import services
    from sessions_app.models import EpisodeVector

    (episode,) = services.episodes_bulk_create(
        session=session, items=[{"user_input": "Q.", "response": "A."}]
    )
    vectors = _encoded()[:3]
    EpisodeVector.objects.create(
        episode_id=episode.pk, session=session, token_count=2, vector=to_bytes(vectors)
    )
    stored = bytes(EpisodeVector.objects.get(episode_id=episode.pk).vector)
    executor = MigrationExecutor(connection)
    executor.migrate([("sessions_app", "0015_episode_vector_inline")])
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT vector FROM sessions_app_episodevector WHERE episode_id = %s", [episode.pk]
            )
            (before,) = cursor.fetchone()
        float16 = np.frombuffer(bytes(before), dtype="<f2").reshape(-1, DIMENSIONS)
        assert float16.shape == (3, DIMENSIONS)
        assert np.abs(float16.astype(np.float32) - vectors).max() < 0.002
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    again, _ = to_matrix([EpisodeVector.objects.get(episode_id=episode.pk).vector])
    # Rounded twice (to float16 and back to int8): within a step of what was stored.
    assert again.shape == (3, DIMENSIONS) and np.abs(again - to_matrix([stored])[0]).max() < 0.002
