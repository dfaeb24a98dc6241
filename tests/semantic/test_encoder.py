"""The numpy sentence encoder: unit vectors that put paraphrases close."""

from __future__ import annotations

import numpy as np

from sessions_app.semantic.encoder import DIMENSIONS, MAX_TOKENS, encoder


def test_vectors_are_unit_length_and_deterministic():
    texts = ["The wifi password at the cabin is heron42.", "Work was hectic today."]
    first, again = encoder().encode(texts), encoder().encode(texts)
    assert first.shape == (2, DIMENSIONS)
    assert first.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(first, again)


def test_a_question_in_other_words_is_closest_to_the_fact_it_asks_about():
    question = "What do I type to get online when we stay at the lake house?"
    fact = "Writing this down before I lose it: the wifi password at the cabin is heron42."
    others = [
        "Work was hectic today, three meetings back to back and no lunch.",
        "What can I cook tonight with leftover rice, two eggs and some spinach?",
        "Sold the old car at last and picked up a second-hand one yesterday.",
    ]
    vectors = encoder().encode([question, fact, *others])
    similarity = vectors[1:] @ vectors[0]
    assert int(np.argmax(similarity)) == 0
    assert similarity[0] > similarity[1:].max() + 0.1


def test_a_text_longer_than_the_model_reads_is_cut_not_refused():
    long_text = "word " * (MAX_TOKENS * 4)
    (vector,) = encoder().encode([long_text])
    assert np.isfinite(vector).all()
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5


def test_empty_text_still_gets_a_vector():
    (vector,) = encoder().encode([""])
    assert np.isfinite(vector).all()


def test_the_quantized_model_agrees_with_the_float_reference():
    from tests.semantic.reference_encoder import reference_encoder

    texts = [
        "My sister Ines moved to Porto last spring and found a flat near the river.",
        "How far do I aim to jog every week?",
        "Work was hectic today, three meetings back to back and no lunch.",
    ]
    quantized, reference = encoder().encode(texts), reference_encoder().encode(texts)
    agreement = (quantized * reference).sum(axis=1)
    assert agreement.min() > 0.98
    # Both order the pairs alike: what one finds nearest, so does the other.
    assert np.array_equal(
        np.argsort(quantized @ quantized.T, axis=1), np.argsort(reference @ reference.T, axis=1)
    )
