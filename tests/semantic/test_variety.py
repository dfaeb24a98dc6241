"""Exchanges chosen so that they do not repeat each other (``semantic.variety``)."""

from __future__ import annotations

import numpy as np
import pytest

from sessions_app.retrieval import begin_ranking, fuse
from sessions_app.search import Hit
from sessions_app.semantic import Closeness, embed_pending
from sessions_app.semantic.neighbours import SessionVectors
from sessions_app.semantic.variety import REDUNDANCY_WEIGHT, REDUNDANT_FROM, varied
from sessions_app.services import episodes_bulk_create


def unit(*values: float) -> np.ndarray:
    vector = np.array(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def at_cosine(cosine: float) -> np.ndarray:
    """A unit vector at ``cosine`` to (1, 0)."""
    return unit(cosine, np.sqrt(1 - cosine**2))


def test_a_repeat_gives_way_to_the_next_different_one():
    vectors = np.stack([unit(1, 0, 0), unit(1, 0, 0), unit(0, 1, 0)])
    assert varied(np.array([5.0, 4.9, 4.0]), vectors, 3) == [0, 2, 1]
    assert varied(np.array([5.0, 4.9, 4.0]), vectors, 2) == [0, 2]


@pytest.mark.parametrize(("cosine", "order"), [(0.8, [0, 2, 1]), (0.7, [0, 1, 2])])
def test_the_penalty_grows_with_how_far_the_cosine_goes_beyond_the_threshold(cosine, order):
    # 0.8 costs 3 x 0.5 = 1.5, which puts 4 below 3; 0.7 costs 0.75, which does not.
    assert (cosine - REDUNDANT_FROM) / (1 - REDUNDANT_FROM) * REDUNDANCY_WEIGHT == pytest.approx(
        {0.8: 1.5, 0.7: 0.75}[cosine]
    )
    third = unit(0, 0, 1)
    vectors = np.stack([np.append(at_cosine(1.0), 0), np.append(at_cosine(cosine), 0), third])
    assert varied(np.array([5.0, 4.0, 3.0]), vectors, 3) == order


def test_below_the_threshold_and_without_a_vector_the_scores_alone_decide():
    vectors = np.stack([np.append(at_cosine(1.0), 0), np.append(at_cosine(REDUNDANT_FROM - 0.05), 0)])
    assert varied(np.array([2.0, 1.9]), vectors, 2) == [0, 1]
    # A zero row (not encoded yet) loses nothing to the first, which the third repeats.
    vectors = np.stack([unit(1, 0, 0), np.zeros(3, dtype=np.float32), unit(1, 0, 0), unit(0, 1, 0)])
    assert varied(np.array([3.0, 2.9, 2.8, 2.0]), vectors, 4) == [0, 1, 3, 2]


def test_equal_scores_keep_their_given_order():
    vectors = np.stack([unit(1, 0, 0), unit(0, 1, 0), unit(0, 0, 1)])
    assert varied(np.array([1.0, 1.0, 1.0]), vectors, 3) == [0, 1, 2]


def test_fusion_varies_the_choice_only_when_asked():
    """Episodes 1 and 2 are the same exchange; 3 is as relevant in another direction."""
    question = unit(1, 0, 0)
    heads = np.stack(
        [
            unit(0.8, 0.6, 0),
            unit(0.8, 0.6, 0),
            unit(0.75, 0, 0.66),  # cosine 0.48 to the first two: not a repeat
            unit(0.1, 0.7, 0.7),
            unit(0.2, -0.7, 0.7),
            unit(0.0, 0.7, -0.7),
        ]
    )
    known = SessionVectors(
        ids=np.arange(1, 7, dtype=np.int64),
        tokens=np.full(6, 10, dtype=np.int64),
        heads=heads,
    )
    found = Closeness.of(known, question, ())
    plain = [hit.episode_id for hit in fuse([], found, limit=3)]
    assert plain[:2] == [2, 1]  # equal closeness: newest first
    chosen = [hit.episode_id for hit in fuse([], found, limit=3, varied=True)]
    assert chosen[:2] == [2, 3]
    # The scores are the fused ones, not lowered by any penalty; the repeat
    # lost 3 and fell behind the rest.
    scores = {hit.episode_id: hit.score for hit in fuse([], found, limit=6, varied=True)}
    assert scores == pytest.approx(found.standing_of(range(1, 7)))
    assert list(scores)[-1] == 1
    # A word hit with no vector yet is chosen by its score alone.
    words = [Hit(99, 10.0, frozenset({"heron"}), 5)]
    assert [hit.episode_id for hit in fuse(words, found, limit=3, varied=True)] == [99, 2, 3]


COOKING = [
    "How do I make a quick tomato soup from tins?",
    "Any ideas for a mild vegetable curry the kids would eat?",
    "Is it worth baking my own bread on weekends?",
    "What herbs go well with roast chicken?",
]


@pytest.mark.django_db
def test_the_same_request_made_again_and_again_is_quoted_once_among_other_exchanges(semantic, session):
    """The user asked the same thing six times; asked about dinner in other
    words, the ranking by closeness alone is those six, while the varied
    choice quotes one of them and then the other cooking exchanges (the
    penalty is a score, not a ban: a repeat may come again after them)."""
    repeat = {
        "user_input": "What can I cook tonight with leftover rice and two eggs?",
        "response": "Fry the rice hot, push it aside, scramble the eggs, then fold together.",
    }
    items = [dict(repeat) for _ in range(6)]
    items += [{"user_input": text, "response": "Here is a simple way to do it."} for text in COOKING]
    items += [
        {"user_input": f"Remind me to renew permit number {n}.", "response": "Done."} for n in range(10)
    ]
    episodes = episodes_bulk_create(session=session, items=items)
    embed_pending(session.pk)
    session.refresh_from_db()
    repeats = {episode.pk for episode in episodes[:6]}
    question = "Any suggestions for dinner using what is sitting in the fridge?"
    pending = begin_ranking(session=session, question=question, limit=4)
    plain = [hit.episode_id for hit in pending.hits(varied=False)]
    assert set(plain) <= repeats
    chosen = [hit.episode_id for hit in pending.hits()]
    assert chosen[0] in repeats
    assert set(chosen[1:3]) <= {episode.pk for episode in episodes[6:10]}


def chosen_the_long_way(scores: np.ndarray, vectors: np.ndarray, limit: int) -> list[int]:
    """Every candidate's penalty brought up to date after every choice."""
    penalty = np.zeros(len(scores))
    left = np.ones(len(scores), dtype=bool)
    chosen = []
    for _ in range(min(limit, len(scores))):
        best = int(np.argmax(np.where(left, scores - penalty, -np.inf)))
        chosen.append(best)
        left[best] = False
        repeats = (vectors @ vectors[best] - REDUNDANT_FROM) / (1 - REDUNDANT_FROM)
        penalty = np.maximum(penalty, REDUNDANCY_WEIGHT * repeats)
    return chosen


@pytest.mark.parametrize("seed", range(5))
def test_the_heap_chooses_as_updating_every_candidate_after_every_choice_would(seed):
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(120, 16)).astype(np.float32)
    vectors[1::2] = vectors[::2] + 0.3 * vectors[1::2]  # many near repeats
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors[::17] = 0.0  # some not encoded yet
    scores = np.sort(rng.normal(size=120) * 2)[::-1]
    chosen = varied(scores, vectors, 50)
    assert chosen == chosen_the_long_way(scores, vectors, 50)
    assert chosen != list(range(50))  # the repeats did change the order
