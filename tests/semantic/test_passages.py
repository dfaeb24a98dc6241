"""An episode is encoded as the whole exchange and as passages of a few
sentences of each side, over the whole text up to a number of tokens, each
passage vector stored with its span; the question's candidates are as close
to it as the mean of their whole exchange's and their closest vector's."""

from __future__ import annotations

import numpy as np
import pytest

from sessions_app.models import EpisodeVector
from sessions_app.semantic import closeness, embed_pending, question_vector
from sessions_app.semantic.encoder import encoder
from sessions_app.semantic.passages import (
    PASSAGE_WORDS,
    episode_encoding,
    episode_text,
    episode_texts,
    passage_spans,
    passages,
)
from sessions_app.semantic.vectors import VECTOR_BYTES, spans_of, to_bytes, to_matrix
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
    # Every passage of a long reply, not its first few.
    long_reply = " ".join(f"Point {n} of the answer says something new." for n in range(40))
    texts = episode_texts("Question?", long_reply)
    assert texts[2:] == passages(long_reply) and texts[-1].endswith(
        "Point 39 of the answer says something new."
    )
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
    assert len(bytes(EpisodeVector.objects.get(episode_id=mine[0].pk).vector)) == VECTOR_BYTES
    call_command("embed_episodes", "--rebuild", "--session", str(session.uuid))
    rebuilt, _ = to_matrix([EpisodeVector.objects.get(episode_id=mine[0].pk).vector])
    assert len(rebuilt) == 3
    np.testing.assert_allclose(rebuilt[0], old, atol=2e-3)  # the whole exchange still comes first
    assert bytes(EpisodeVector.objects.get(session=theirs).vector) == untouched


def test_kept_vectors_are_the_whole_exchanges_and_join_newer_ones_in_order():
    from sessions_app.semantic.neighbours import SessionVectors

    def rows(*pairs):  # (episode id, how many vectors); vector values name their episode
        blobs = [to_bytes(np.full((count, 384), pk / 100, dtype=np.float32)) for pk, count in pairs]
        return SessionVectors.read([pk for pk, _ in pairs], [pk * 10 for pk, _ in pairs], blobs)

    kept = rows((1, 1), (2, 3), (3, 2))
    joined = kept.then(rows((4, 2), (5, 1)), keep=4)
    assert joined.ids.tolist() == [2, 3, 4, 5]
    assert joined.tokens.tolist() == [20, 30, 40, 50]
    assert joined.size == 4  # the whole exchange's vector of each, passages never kept
    np.testing.assert_allclose(joined.heads[:, 0], [0.02, 0.03, 0.04, 0.05], atol=1e-4)
    assert kept.then(rows((4, 2)), keep=10).ids.tolist() == [1, 2, 3, 4]


def _unit(*values: float) -> np.ndarray:
    vector = np.zeros(384, dtype=np.float32)
    vector[: len(values)] = values
    return vector / np.linalg.norm(vector)


@pytest.mark.django_db
def test_passages_are_compared_for_the_questions_candidates_only(session):
    """A passage lifts its episode only when the episode is one of the
    question's candidates: among the closest by their whole exchange
    (``refine``), or found by the question's words (``also``)."""
    from sessions_app.semantic import neighbours

    episodes = episodes_bulk_create(
        session=session, items=[{"user_input": f"Q{n}.", "response": f"A{n}."} for n in range(3)]
    )
    # The first: far as a whole, one passage exactly the question's; the others closer as a whole.
    rows = {
        episodes[0].pk: np.stack([_unit(0, 1), _unit(1, 0)]),
        episodes[1].pk: _unit(0.6, 0.8)[None],
        episodes[2].pk: _unit(0.5, 0.8660254)[None],
    }
    EpisodeVector.objects.bulk_create(
        EpisodeVector(episode_id=pk, session=session, token_count=5, vector=to_bytes(matrix))
        for pk, matrix in rows.items()
    )
    session.refresh_from_db()
    asked = _unit(1, 0)

    def similarity(**kwargs) -> list[float]:
        neighbours.forget()
        found = closeness(
            session_pk=session.pk,
            newest_episode_id=session.cached_last_episode_id,
            vector=asked,
            scan=10,
            **kwargs,
        )
        # Stored, a vector of two values moves a cosine by up to 0.004 (semantic.vectors).
        return [round(float(v), 2) for v in found.similarity]

    assert similarity(refine=1) == [0.0, 0.6, 0.5]  # not a candidate: its whole exchange alone
    assert similarity(refine=1, also=[episodes[0].pk]) == [0.5, 0.6, 0.5]
    assert similarity(refine=3) == [0.5, 0.6, 0.5]
    assert similarity(refine=2, exclude_ids=[episodes[1].pk])[0] == 0.5


@pytest.mark.django_db
def test_a_question_reads_the_whole_exchanges_vectors_then_its_candidates_rows_by_id(session):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from sessions_app.semantic import neighbours

    episodes = episodes_bulk_create(
        session=session,
        items=[{"user_input": f"Question {n} here.", "response": f"Answer {n} there."} for n in range(4)],
    )
    embed_pending(session.pk)
    stored = {
        pk: to_matrix([blob])[0]
        for pk, blob in EpisodeVector.objects.filter(session=session).values_list("episode_id", "vector")
    }
    neighbours.forget()
    known = neighbours._read_newest(session.pk, scan=3)
    assert known.ids.tolist() == [e.pk for e in episodes[1:]]
    np.testing.assert_array_equal(known.heads, np.stack([stored[e.pk][0] for e in episodes[1:]]))
    session.refresh_from_db()
    with CaptureQueriesContext(connection) as ctx:
        found = closeness(
            session_pk=session.pk,
            newest_episode_id=session.cached_last_episode_id,
            vector=stored[episodes[3].pk][1],
            scan=3,
            refine=1,
        )
    reads = [q["sql"] for q in ctx.captured_queries if "episodevector" in q["sql"]]
    assert len(reads) == 2  # the whole exchanges' (kept for the next question), then one candidate's row
    # By their ids (written into the query on SQLite, one array parameter on PostgreSQL): the one candidate's.
    assert '"episode_id" IN (' in reads[1] or '"episode_id" = ANY(' in reads[1]
    assert found.rows.ids == {episodes[3].pk} and set(found.rows.at) == {episodes[3].pk}


SIX_THOUSAND = " ".join(
    f"Step {n}: check the build log, then run the tests again and compare the timings with the last run."
    for n in range(62)
)
FACT = "The staging database listens on port 6432 behind pgbouncer."


@pytest.mark.django_db
def test_a_fact_at_the_end_of_a_six_thousand_character_response_gets_a_vector_and_its_span(semantic, session):
    response = f"{SIX_THOUSAND} {FACT}"
    assert len(response) > 6000
    user_input = "How do I make the CI faster?"
    (episode,) = episodes_bulk_create(
        session=session, items=[{"user_input": user_input, "response": response}]
    )
    embed_pending(session.pk)
    row = EpisodeVector.objects.get(episode_id=episode.pk)
    vectors, _ = to_matrix([row.vector])
    spans = spans_of(row.spans)
    assert len(spans) == len(vectors) - 1
    text = user_input + response
    # The last passage ends where the response ends, and it holds the fact.
    assert spans[-1].tolist()[1] == len(text) and FACT in text[spans[-1][0] : spans[-1][1]]
    # Its vector is the passage's, the closest of all to a question about it.
    asked = question_vector("Which port does the staging database use?")
    assert int(np.argmax(vectors[1:] @ asked)) == len(spans) - 1
    expected = encoder().encode([text[spans[-1][0] : spans[-1][1]]])[0]
    np.testing.assert_allclose(vectors[-1], expected, atol=3e-3)
    # Each span is a passage the context can quote: the passages of its side, offset.
    own = [(s + len(user_input), e + len(user_input)) for s, e in passage_spans(response)]
    assert [tuple(span) for span in spans.tolist()] == [(0, len(user_input)), *own]


def test_passages_are_encoded_up_to_the_tokens_per_episode_the_users_first(settings):
    from sessions_app.tokens import count_tokens

    user_input = " ".join(f"My note {n} says the deploy key rotates monthly." for n in range(10))
    response = SIX_THOUSAND
    settings.SEMANTIC_PASSAGE_TOKENS_PER_EPISODE = 150
    capped = episode_encoding(user_input, response)
    text = user_input + response
    assert sum(count_tokens(text[s:e]) for s, e in capped.spans) <= 150
    assert capped.spans[0][0] == 0  # the user's passages come first
    every_one = episode_encoding(user_input, response, tokens=10**6)
    assert capped.spans == every_one.spans[: len(capped.spans)]
    assert len(capped.spans) < len(every_one.spans)
    assert every_one.spans[-1][1] == len(text)
    settings.SEMANTIC_PASSAGE_TOKENS_PER_EPISODE = 0
    assert episode_encoding(user_input, response).texts == [episode_text(user_input, response)]


@pytest.mark.django_db
def test_the_quoted_passages_use_each_stored_vectors_span_and_rows_of_the_older_layout_by_text(
    semantic, session
):
    from sessions_app.excerpts import Text, best_passages
    from sessions_app.semantic.passages import older_layout

    user_input = "How do I make the CI faster?"
    response = f"{SIX_THOUSAND} {FACT}"
    (episode,) = episodes_bulk_create(
        session=session, items=[{"user_input": user_input, "response": response}]
    )
    embed_pending(session.pk)
    text = Text(episode.pk, user_input, response)
    asked = question_vector("Which port does the staging database use?")
    whole = user_input + response
    (kept,) = best_passages(texts=[text], terms=[], vector=asked, tokens=40).values()
    assert any(FACT in whole[start:end] for start, end in kept)
    # A row of the older layout (no spans, passages of the first 2,000
    # characters of each side): matched by text, the fact past it unscored.
    EpisodeVector.objects.filter(episode_id=episode.pk).update(
        vector=to_bytes(encoder().encode(older_layout(user_input, response))), spans=b""
    )
    (kept,) = best_passages(texts=[text], terms=[], vector=asked, tokens=40).values()
    assert kept and not any(FACT in whole[start:end] for start, end in kept)
