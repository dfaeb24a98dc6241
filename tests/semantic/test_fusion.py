"""Words and meaning added up as scores: closeness in standard deviations
above the session's mean, plus BM25 times ``WORDS_WEIGHT``."""

from __future__ import annotations

import numpy as np
import pytest

from sessions_app.retrieval import WORDS_WEIGHT, begin_ranking, fuse, meaning_text
from sessions_app.search import Hit, rank_question
from sessions_app.semantic import Closeness, embed_pending
from sessions_app.semantic.neighbours import SessionVectors
from sessions_app.services import episodes_bulk_create


def closeness_of(similarities: dict[int, float], exclude: tuple[int, ...] = ()) -> Closeness:
    """A Closeness over episodes whose vectors give exactly these similarities to the question."""
    ids = sorted(similarities)
    # Unit vectors at the given cosine to the question's (the first axis).
    heads = np.array([[similarities[pk], np.sqrt(1 - similarities[pk] ** 2)] for pk in ids], dtype=np.float32)
    known = SessionVectors(
        ids=np.array(ids, dtype=np.int64),
        tokens=np.full(len(ids), 10, dtype=np.int64),
        heads=heads,
    )
    return Closeness.of(known, np.array([1.0, 0.0], dtype=np.float32), exclude)


def test_standing_is_in_deviations_over_what_is_compared_and_leaves_out_the_excluded():
    found = closeness_of({1: 0.2, 2: 0.4, 3: 0.6, 4: 0.9}, exclude=(4,))
    standing = found.standing_of([1, 2, 3, 4, 99])
    # 4 is excluded and 99 was never compared: neither has a standing.
    assert set(standing) == {1, 2, 3}
    values = np.array([standing[1], standing[2], standing[3]])
    assert values.mean() == pytest.approx(0.0, abs=1e-5)
    assert values.std() == pytest.approx(1.0, abs=1e-5)
    assert [n.episode_id for n in found.nearest(10)] == [3, 2, 1]
    assert found.nearest(1)[0].standing == pytest.approx(standing[3])


def test_episodes_all_alike_stand_level():
    found = closeness_of({1: 0.5, 2: 0.5})
    assert found.standing_of([1, 2]) == {1: 0.0, 2: 0.0}


def test_a_word_hit_scores_its_standing_plus_weighted_bm25_and_an_unencoded_one_counts_as_average():
    found = closeness_of({1: 0.1, 2: 0.3, 3: 0.5, 4: 0.7})
    standing = found.standing_of([1, 2, 3, 4])
    words = [Hit(2, 4.0, frozenset({"heron"}), 10), Hit(9, 1.0, frozenset({"cabin"}), 12)]
    fused = {hit.episode_id: hit for hit in fuse(words, found, limit=10)}
    assert fused[2].score == pytest.approx(standing[2] + WORDS_WEIGHT * 4.0)
    assert fused[2].terms == frozenset({"heron"})
    # Episode 9 has no vector yet: its words alone.
    assert fused[9].score == pytest.approx(WORDS_WEIGHT * 1.0)
    # Found by meaning alone: its standing, no terms.
    assert fused[4].score == pytest.approx(standing[4])
    assert fused[4].terms == frozenset()
    order = [hit.episode_id for hit in fuse(words, found, limit=3)]
    assert order == sorted(fused, key=lambda pk: -fused[pk].score)[:3]


FORMS = [
    "parking permit",
    "library card",
    "council tax",
    "passport renewal",
    "gym membership",
    "broadband",
    "water meter",
    "bin collection",
    "dental claim",
    "train refund",
    "bank card",
    "tenancy deposit",
    "energy bill",
    "phone contract",
    "car insurance",
    "school place",
    "doctor's letter",
    "pension",
    "tax return",
    "home insurance",
]


@pytest.mark.django_db
def test_the_exchange_holding_the_questions_rare_word_comes_first_among_closer_ones(semantic, session):
    """Twenty exchanges tell of a support ticket closed; one names ticket
    88213, in other words. Asked about ticket 88213, that one comes first:
    its rare word outweighs the many exchanges closer in meaning. Fused by
    ranks it fell behind them: first by words, but eighteenth by meaning."""
    items = [
        {"user_input": f"My support ticket about the {form} was closed today.", "response": "Good."}
        for form in FORMS
    ]
    items.insert(
        5, {"user_input": "Still nothing on 88213, they promised a reply this week.", "response": "Annoying."}
    )
    items += [{"user_input": f"Dinner idea {n}?", "response": "Soup."} for n in range(10)]
    episodes = episodes_bulk_create(session=session, items=items)
    embed_pending(session.pk)
    session.refresh_from_db()
    hits = begin_ranking(session=session, question="Is support ticket 88213 closed yet?", limit=5).hits()
    assert hits[0].episode_id == episodes[5].pk
    assert "88213" in hits[0].terms


GREETINGS = [
    "Rohan! So good to hear from you, how was the weekend?",
    "Morning Rohan, did the storm keep you up too?",
    "Rohan, you will not believe the queue at the post office.",
    "Hey Rohan, are we still on for the walk on Sunday?",
    "Rohan, I finally fixed the bike, thanks for the tip.",
    "Evening Rohan! The match last night was unbelievable.",
    "Rohan, my tomatoes are finally turning red.",
    "Oh Rohan, I burnt the toast again this morning.",
    "Rohan, did you ever finish that crime novel?",
    "Hi Rohan, the new cafe on the corner is open at last.",
    "Rohan, the train was late again, third time this week.",
    "Rohan! I booked the cabin for October.",
]


@pytest.mark.django_db
def test_meaning_is_compared_without_the_name_the_conversation_keeps_repeating(semantic, session):
    """A chat with Rohan greets him in every other exchange; once he says
    his little girl Sigrid started school. Asked for the name of Rohan's
    daughter, the question without his name finds that exchange by meaning:
    with the name in, the encoder puts the greetings nearest."""
    items = [{"user_input": text, "response": "Ha, tell me more."} for text in GREETINGS]
    items += [
        {"user_input": f"Shopping list number {n}: bread, milk.", "response": "Noted."} for n in range(12)
    ]
    items.insert(7, {"user_input": "How are the kids?", "response": "Our little girl Sigrid started school!"})
    episodes = episodes_bulk_create(session=session, items=items)
    embed_pending(session.pk)
    session.refresh_from_db()
    question = "What is the name of Rohan's daughter?"
    hits = begin_ranking(session=session, question=question, limit=3).hits()
    assert hits[0].episode_id == episodes[7].pk
    assert hits[0].terms == frozenset()  # found by meaning alone


@pytest.mark.django_db
def test_a_question_of_stop_words_and_common_words_alone_is_compared_whole(session):
    episodes_bulk_create(session=session, items=[{"user_input": t, "response": "Ha."} for t in GREETINGS])
    session.refresh_from_db()
    asked = rank_question(
        session_pk=session.pk,
        episode_count=session.cached_episode_count,
        total_tokens=session.cached_total_tokens,
        text="Who, Rohan?",
        limit=5,
    )
    assert asked.common_words() == ["Rohan"]
    assert asked.without_common_words() == ""
    assert meaning_text("Who, Rohan?", asked) == "Who, Rohan?"
    assert meaning_text("!!!", None) == "!!!"  # no words to search for at all
