"""An episode is encoded as the whole exchange and as passages of a few
sentences of each side, and is as close to a question as its closest vector."""

from __future__ import annotations

import numpy as np
import pytest

from sessions_app.models import EpisodeVector
from sessions_app.semantic import closeness, embed_pending, question_vector
from sessions_app.semantic.encoder import encoder
from sessions_app.semantic.passages import MAX_VECTORS, PASSAGE_WORDS, episode_text, episode_texts, passages
from sessions_app.semantic.vectors import to_bytes, to_matrix
from sessions_app.services import episodes_bulk_create

ADVICE = (
    "Start by writing down what you spend in a normal month. "
    "Group it into needs, wants and savings, and compare the shares with what you hoped for. "
    "Automatic transfers on payday make saving the default rather than a decision. "
    "Review the plan after three months and adjust the amounts that did not hold. "
    "Small recurring subscriptions add up faster than one large purchase. "
)


def test_passages_pack_whole_sentences_up_to_the_word_limit():
    text = (
        "One two three. Four five six seven! Eight nine?\n" + " ".join(["long"] * (PASSAGE_WORDS + 5)) + "."
    )
    found = passages(text)
    assert found[0] == "One two three. Four five six seven! Eight nine?"
    assert found[1].split() == ["long"] * (PASSAGE_WORDS + 4) + [
        "long."
    ]  # a long sentence is a passage alone
    assert all(len(p.split()) <= PASSAGE_WORDS for p in passages(ADVICE * 3))
    assert " ".join(passages(ADVICE)) == ADVICE.strip()  # nothing lost, nothing reordered


def test_episode_texts_are_the_whole_exchange_then_each_sides_passages():
    texts = episode_texts("My sister moved to Graz.", "Graz is lovely. Trams everywhere.")
    assert texts == [
        episode_text("My sister moved to Graz.", "Graz is lovely. Trams everywhere."),
        "My sister moved to Graz.",
        "Graz is lovely. Trams everywhere.",
    ]
    # No passage spans both sides, however short they are.
    assert all("\n" not in t for t in texts[1:])
    assert episode_texts("Only this.", "") == ["Only this.\n"]  # the one passage is the whole exchange
    long_reply = " ".join(f"Point {n} of the answer says something new." for n in range(40))
    assert len(episode_texts("Question?", long_reply)) == MAX_VECTORS
    # A passage repeated within the episode is encoded once.
    assert episode_texts("Noted.", "Noted.") == ["Noted.\nNoted.", "Noted."]


@pytest.mark.django_db
def test_a_fact_said_in_passing_in_a_long_message_is_lifted_by_its_passage(session):
    fact = "By the way, my daughter Mira just started at the conservatory in Utrecht."
    buried = {
        "user_input": f"Can you help me plan my budget? {fact} Anyway, where should I start?",
        "response": ADVICE * 2,
    }
    others = [
        {
            "user_input": "How often should a child practise the violin?",
            "response": "Short daily sessions beat one long weekly one. Keep it playful and let them pick some pieces.",
        },
        {
            "user_input": "My son wants to study abroad next year, what should he prepare?",
            "response": "Start with the language, the paperwork and a budget for the first months.",
        },
        {
            "user_input": "What makes a good practice routine for singing?",
            "response": "Warm up, work on breathing, then repertoire. Record yourself once a week.",
        },
        *({"user_input": f"Tips for month {n}: how do I save more?", "response": ADVICE} for n in range(5)),
    ]
    episodes = episodes_bulk_create(session=session, items=[*others[:4], buried, *others[4:]])
    embed_pending(session.pk)
    session.refresh_from_db()
    asked = question_vector("Where is my girl studying music?")

    found = closeness(
        session_pk=session.pk,
        newest_episode_id=session.cached_last_episode_id,
        vector=asked,
        scan=100,
    ).nearest(len(episodes))
    by_passages = [n.episode_id for n in found].index(episodes[4].pk)
    # By the whole exchange's vector alone the advice drowns the fact: two others come first.
    whole = encoder().encode([episode_text(e.user_input, e.response) for e in episodes]) @ asked
    by_whole = list(np.argsort(-whole)).index(4)
    assert by_whole == 2
    assert by_passages < by_whole


@pytest.mark.django_db
def test_rows_holding_one_vector_are_read_beside_rows_holding_several(session):
    episodes = episodes_bulk_create(
        session=session,
        items=[
            {"user_input": "The wifi password at the cabin is heron42.", "response": "Noted."},
            {"user_input": "Lovely weather for a walk today.", "response": "Enjoy it."},
        ],
    )
    embed_pending(session.pk)
    # The first episode's row as written before passages: the whole exchange alone.
    whole = encoder().encode([episode_text(episodes[0].user_input, episodes[0].response)])[0]
    EpisodeVector.objects.filter(episode_id=episodes[0].pk).update(vector=to_bytes(whole))
    matrix, counts = to_matrix(
        list(
            EpisodeVector.objects.filter(session=session)
            .order_by("episode_id")
            .values_list("vector", flat=True)
        )
    )
    assert counts.tolist() == [1, 3]
    assert matrix.shape == (4, 384)
    session.refresh_from_db()
    found = closeness(
        session_pk=session.pk,
        newest_episode_id=session.cached_last_episode_id,
        vector=question_vector("What do I type to get online at the lake house?"),
        scan=100,
    ).nearest(2)
    assert [n.episode_id for n in found] == [episodes[0].pk, episodes[1].pk]


@pytest.mark.django_db
def test_embed_episodes_rebuild_encodes_old_rows_as_episodes_are_encoded_now(semantic, session, other_user):
    from django.core.management import call_command

    from tests.factories import ChatSessionFactory

    mine = episodes_bulk_create(
        session=session, items=[{"user_input": "My sister moved to Graz.", "response": "Graz is lovely."}]
    )
    theirs = ChatSessionFactory(owner=other_user)
    episodes_bulk_create(session=theirs, items=[{"user_input": "Hello there.", "response": "Hi."}])
    embed_pending(session.pk)
    embed_pending(theirs.pk)
    old = encoder().encode([episode_text(mine[0].user_input, mine[0].response)])[0]
    EpisodeVector.objects.filter(episode_id=mine[0].pk).update(vector=to_bytes(old))
    untouched = bytes(EpisodeVector.objects.get(session=theirs).vector)

    call_command("embed_episodes")  # fills in what is missing only: the old row stays
    assert len(bytes(EpisodeVector.objects.get(episode_id=mine[0].pk).vector)) == 384 * 2
    call_command("embed_episodes", "--rebuild", "--session", str(session.uuid))
    rebuilt, _ = to_matrix([EpisodeVector.objects.get(episode_id=mine[0].pk).vector])
    assert len(rebuilt) == 3
    np.testing.assert_allclose(rebuilt[0], old, atol=2e-3)  # the whole exchange still comes first
    assert bytes(EpisodeVector.objects.get(session=theirs).vector) == untouched


def test_kept_vectors_joined_with_newer_ones_keep_each_episodes_rows_together():
    from sessions_app.semantic.neighbours import SessionVectors

    def rows(*pairs):  # (episode id, how many vectors); vector values name their episode
        blobs = [to_bytes(np.full((count, 384), pk / 100, dtype=np.float32)) for pk, count in pairs]
        return SessionVectors.read([pk for pk, _ in pairs], [pk * 10 for pk, _ in pairs], blobs)

    kept = rows((1, 1), (2, 3), (3, 2))
    joined = kept.then(rows((4, 2), (5, 1)), keep=4)
    assert joined.ids.tolist() == [2, 3, 4, 5]
    assert joined.tokens.tolist() == [20, 30, 40, 50]
    assert joined.counts.tolist() == [2, 1, 1, 0]
    assert joined.size == 8 and len(joined.passages) == 4
    # Each episode's closeness is its own rows' best, whatever rows went before.
    ones = np.ones(384, dtype=np.float32)
    np.testing.assert_allclose(joined.similarity(ones), [7.68, 11.52, 15.36, 19.2], rtol=1e-3)
    assert kept.then(rows((4, 2)), keep=10).ids.tolist() == [1, 2, 3, 4]


def test_passages_are_compared_for_the_newest_episodes_only(monkeypatch):
    from sessions_app.semantic import neighbours

    def episode(head: float, passage: float) -> bytes:
        return to_bytes(np.stack([np.full(384, head), np.full(384, passage)]).astype(np.float32))

    known = neighbours.SessionVectors.read(
        [1, 2, 3], [1, 1, 1], [episode(0.1, 0.5), episode(0.2, 0.6), episode(0.4, 0.3)]
    )
    ones = np.ones(384, dtype=np.float32)
    # The mean of the whole exchange's closeness and the closest vector's (the third's: its whole).
    np.testing.assert_allclose(known.similarity(ones), [0.3 * 384, 0.4 * 384, 0.4 * 384], rtol=1e-3)
    monkeypatch.setattr(neighbours, "PASSAGE_EPISODES", 2)
    np.testing.assert_allclose(known.similarity(ones), [0.1 * 384, 0.4 * 384, 0.4 * 384], rtol=1e-3)


def test_passages_beyond_the_newest_episodes_are_not_kept(monkeypatch):
    from sessions_app.semantic import neighbours

    monkeypatch.setattr(neighbours, "PASSAGE_EPISODES", 2)

    def rows(*pairs):
        blobs = [to_bytes(np.full((count, 384), pk / 100, dtype=np.float32)) for pk, count in pairs]
        return neighbours.SessionVectors.read([pk for pk, _ in pairs], [1] * len(pairs), blobs)

    joined = rows((1, 3), (2, 2)).then(rows((3, 2), (4, 3)), keep=10)
    assert joined.ids.tolist() == [1, 2, 3, 4]
    assert joined.counts.tolist() == [0, 0, 1, 2]
    np.testing.assert_allclose(joined.passages[:, 0], [0.03, 0.04, 0.04], atol=1e-4)


@pytest.mark.django_db
def test_a_first_question_reads_passages_for_the_newest_episodes_only(session, monkeypatch):
    from sessions_app.semantic import neighbours

    monkeypatch.setattr(neighbours, "PASSAGE_EPISODES", 2)
    episodes = episodes_bulk_create(
        session=session,
        items=[{"user_input": f"Question {n} here.", "response": f"Answer {n} there."} for n in range(4)],
    )
    embed_pending(session.pk)
    stored, _ = to_matrix(
        list(
            EpisodeVector.objects.filter(session=session)
            .order_by("episode_id")
            .values_list("vector", flat=True)
        )
    )
    known = neighbours._read_newest(session.pk, scan=3)
    assert known.ids.tolist() == [e.pk for e in episodes[1:]]
    assert known.counts.tolist() == [0, 2, 2]  # the oldest compared: its whole exchange's vector only
    np.testing.assert_array_equal(known.heads, stored[[3, 6, 9]])
    np.testing.assert_array_equal(known.passages, stored[[7, 8, 10, 11]])
    assert neighbours._read_newest(session.pk, scan=2).counts.tolist() == [2, 2]
