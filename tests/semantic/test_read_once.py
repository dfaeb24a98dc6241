"""A context reads its candidates' stored vectors once, and does not read
the exchanges that cannot clear the relevance floor: what retrieval compared
tells their best evidence, and the same context comes out."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from sessions_app import search
from sessions_app.models import EpisodeVector
from sessions_app.search import rank_question
from sessions_app.semantic import embed_pending, neighbours
from sessions_app.semantic.passage_rows import PassageRows
from sessions_app.semantic.vectors import spans_to_bytes, to_bytes
from sessions_app.services import episodes_bulk_create
from summaries.context import build_context, retrieved, sources

pytestmark = pytest.mark.django_db

STEPS = " ".join(
    f"Step {n}: check the build log, then run the tests again and compare the timings." for n in range(30)
)
TOPICS = [
    ("Can you suggest a quick dinner with lentils?", "A lentil curry takes thirty minutes with rice."),
    ("How long should I boil eggs for a soft yolk?", "About six minutes, then cold water."),
    ("Which plants grow well on a shady balcony?", "Ferns, ivy and begonias cope with shade."),
    ("My deploy failed again, what now?", f"{STEPS} The staging database listens on port 6432."),
    ("What is a good stretch for a stiff back?", "Try the cat-cow stretch slowly, ten times."),
]
QUESTIONS = [
    "Which port does the staging database listen on?",
    "How long do the eggs boil?",
    "What did you say about the build log?",
    "Any idea for dinner tonight?",
    "What was the name of my first teacher?",
]


@pytest.fixture
def long_session(session):
    items = [{"user_input": q, "response": a} for _ in range(8) for q, a in TOPICS]
    episodes = episodes_bulk_create(session=session, items=items)
    embed_pending(session.pk)
    session.refresh_from_db()
    return session, episodes


def test_the_candidates_vectors_are_read_once_per_question(semantic, long_session):
    session, _ = long_session
    neighbours.forget()
    for question in QUESTIONS[:3]:
        with CaptureQueriesContext(connection) as ctx:
            result = build_context(session=session, question=question, budget=2000)
        assert result.retrieved
        reads = [q["sql"] for q in ctx.captured_queries if "episodevector" in q["sql"]]
        # The whole exchanges' vectors (kept, then only what is newer), then the
        # candidates' rows: the passages quoted are scored from those, not read again.
        assert len(reads) == 2, reads


def test_what_cannot_clear_the_floor_is_not_read_and_the_context_is_the_same(
    semantic, long_session, monkeypatch
):
    session, _ = long_session
    read: list[int] = []
    texts = sources.quoted_texts

    def recording(session_pk, ids, terms):
        ids = list(ids)
        read.extend(ids)
        return texts(session_pk, ids, terms)

    monkeypatch.setattr(sources, "quoted_texts", recording)
    judged = retrieved.cannot_clear
    skipped = 0
    for question in QUESTIONS:
        for budget in (600, 2000):
            read.clear()
            pruned = build_context(session=session, question=question, budget=budget).as_dict()
            read_pruned = list(read)
            monkeypatch.setattr(retrieved, "cannot_clear", lambda hits, pending: set())
            read.clear()
            whole = build_context(session=session, question=question, budget=budget).as_dict()
            monkeypatch.setattr(retrieved, "cannot_clear", judged)
            assert pruned == whole, question
            skipped += len(read) - len(read_pruned)
            # Never left unread: what is quoted, or over the floor and out of room.
            assert set(whole["retrieved"]) | set(whole["omitted"]["retrieved"]) <= set(read_pruned)
    assert skipped > 0  # some ranked exchanges were judged without reading them


def test_the_most_weight_leaves_out_only_terms_known_absent(session, monkeypatch):
    monkeypatch.setattr(search, "WINDOW", 4)
    items = [
        {"user_input": "The harbour ferry will leave at nine.", "response": "Noted, the ferry."},
        {"user_input": "Our ferry was late today.", "response": "Sorry about the ferry."},
    ]
    items += [{"user_input": f"Ferry day {n}.", "response": "Another ferry note."} for n in range(10)]
    episodes = episodes_bulk_create(session=session, items=items)
    session.refresh_from_db()
    ranking = rank_question(
        session_pk=session.pk,
        episode_count=session.cached_episode_count,
        total_tokens=session.cached_total_tokens,
        text="When does the harbour ferry leave?",
        limit=4,
    )
    ranking.hits()
    idf = ranking.idf
    harbour = next(term for term in idf if term.startswith("harbo"))
    assert harbour not in ranking.common
    everything = sum(idf.values())
    # Outside the window: the rare term's lookup read all its matches.
    assert ranking.most_weight(episodes[0].pk) == pytest.approx(everything)
    assert ranking.common and len(ranking.common) < len(idf)
    assert ranking.most_weight(episodes[1].pk) == pytest.approx(sum(idf[t] for t in ranking.common))
    # In the window, exactly the terms it holds.
    newest = episodes[-1].pk
    held = next(match.terms for match in ranking.window if match.episode_id == newest)
    assert harbour not in held and held
    assert ranking.most_weight(newest) == pytest.approx(sum(idf[t] for t in held))


def _unit(*values: float) -> np.ndarray:
    vector = np.zeros(384, dtype=np.float32)
    vector[: len(values)] = values
    return vector / np.linalg.norm(vector)


def test_the_rows_read_once_give_each_episodes_best_passage_and_best_vector(session):
    episodes = episodes_bulk_create(
        session=session, items=[{"user_input": f"Q {n}.", "response": f"A {n}."} for n in range(4)]
    )
    rows = {
        # Whole exchange closest, passages further.
        episodes[0].pk: (np.stack([_unit(1, 0), _unit(0.6, 0.8), _unit(0, 1)]), [(0, 4), (4, 8)]),
        episodes[1].pk: (_unit(0.5, 0.8660254)[None], []),  # no passages
        episodes[2].pk: (np.stack([_unit(0, 1), _unit(0.8, 0.6)]), [(0, 4)]),
    }
    for pk, (matrix, spans) in rows.items():
        EpisodeVector.objects.create(
            episode_id=pk,
            session=session,
            token_count=5,
            vector=to_bytes(matrix),
            spans=spans_to_bytes(spans),
        )
    ids = [episode.pk for episode in episodes]  # the last has no row
    read = PassageRows.read(ids, _unit(1, 0))
    closest = read.closest_passages()
    assert set(closest) == {ids[0], ids[2]}
    # Stored, a value moves by up to half its vector's step (semantic.vectors): a
    # vector of two values has a coarse one (0.0068 for 0.866), the encoder's about 0.002.
    assert closest[ids[0]] == pytest.approx(0.6, abs=4e-3) and closest[ids[2]] == pytest.approx(0.8, abs=4e-3)
    assert read.best_cosine(ids[0]) == pytest.approx(1.0, abs=4e-3)  # the whole exchange's counts too
    assert read.best_cosine(ids[1]) == pytest.approx(0.5, abs=4e-3)
    assert read.best_cosine(ids[3]) == -1.0  # read, no row
    assert read.best_cosine(10**9) is None  # not read
    stored = read.stored(ids[0])
    assert stored.spans.tolist() == [[0, 4], [4, 8]] and len(stored.vectors) == 2
    assert read.stored(ids[3]) is None
    # Without the question's vector: the rows alone, nothing judged.
    alone = PassageRows.read(ids, None)
    assert alone.closest_passages() == {} and alone.best_cosine(ids[0]) is None
    assert alone.stored(ids[2]).spans.tolist() == [[0, 4]]
