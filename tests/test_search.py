"""Full-text search of episodes (sessions_app.search), on whichever database
the suite runs: the index kept in the write transaction, any-word matching,
rare words over common ones, isolation between sessions, bounded cost."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from sessions_app.models import ChatSession
from sessions_app.search import (
    COMMON_EPISODES,
    EmptyQuery,
    Ranking,
    rank_question,
    rank_session,
    search_terms,
)
from sessions_app.search.base import owner_scope, session_scope
from sessions_app.search.database import episode_backend
from sessions_app.search.schema import FTS
from sessions_app.services import episode_create, episodes_bulk_create
from tests.factories import ChatSessionFactory

pytestmark = pytest.mark.django_db


def rank(session: ChatSession, text: str, limit: int = 10, **kwargs) -> list[int]:
    session.refresh_from_db()
    hits = rank_session(
        session_pk=session.pk,
        episode_count=session.cached_episode_count,
        total_tokens=session.cached_total_tokens,
        text=text,
        limit=limit,
        **kwargs,
    )
    return [hit.episode_id for hit in hits]


def filler(n: int, name: str = "Caroline") -> dict[str, str]:
    return {
        "user_input": f"{name} here again, day {n}: what should I cook tonight?",
        "response": f"{name}, a quick pasta with vegetables would do nicely on day {n}.",
    }


def test_single_and_bulk_writes_are_searchable_at_once(session):
    single = episode_create(
        session=session, user_input="Where did I park the bicycle?", response="By the library."
    )
    bulk = episodes_bulk_create(
        session=session,
        items=[{"user_input": "Tell me about volcanoes", "response": "Volcanoes vent magma."}],
    )
    assert rank(session, "bicycle") == [single.pk]
    assert rank(session, "volcano") == [bulk[0].pk]  # stemmed: volcano ~ volcanoes


def test_a_rolled_back_write_leaves_nothing_in_the_index(session):
    with pytest.raises(RuntimeError), transaction.atomic():
        episode_create(session=session, user_input="A secret about zeppelins", response="Noted.")
        raise RuntimeError
    kept = episode_create(session=session, user_input="Something else", response="Fine.")
    assert rank(session, "zeppelins") == []
    assert rank(session, "something") == [kept.pk]


def test_any_word_of_the_question_matches(session):
    first = episode_create(session=session, user_input="My cat is called Miso", response="Lovely name.")
    second = episode_create(session=session, user_input="I live in Porto", response="A fine city.")
    episode_create(session=session, user_input="Unrelated chatter", response="Indeed.")
    assert set(rank(session, "Which city do I live in and what is my cat called?")) == {first.pk, second.pk}


@pytest.mark.parametrize("size", [40, 450])
def test_a_rare_word_outweighs_a_name_in_every_exchange(session, size):
    # 450 exchanges: more than the window read with every search, so the
    # common name's weight is estimated and the rare word found through the index.
    items = [filler(n) for n in range(size)]
    items[size // 3] = {"user_input": "I adopted a greyhound last spring", "response": "How wonderful."}
    created = episodes_bulk_create(session=session, items=items)
    top = rank(session, "Caroline, what breed is the greyhound?", limit=3)
    assert top[0] == created[size // 3].pk


def ranking(session: ChatSession, text: str) -> Ranking:
    session.refresh_from_db()
    return rank_question(
        session_pk=session.pk,
        episode_count=session.cached_episode_count,
        total_tokens=session.cached_total_tokens,
        text=text,
        limit=10,
    )


@pytest.mark.parametrize("size", [40, 450])
def test_a_question_less_the_sessions_common_words_is_what_it_asks(session, size):
    # In 450 exchanges the name's share is estimated from the window.
    items = [filler(n) for n in range(size)]
    items[size // 3] = {"user_input": "Our little one, Sigrid, started school", "response": "Lovely."}
    created = episodes_bulk_create(session=session, items=items)
    found = ranking(session, "What is the name of Caroline's daughter?")
    assert found.common_words() == ["Caroline"]
    assert found.without_common_words() == "What is the name of 's daughter?"
    assert search_terms("Caroline")[0] in found.common
    # The words' own ranking is rank_session's, from the same reads.
    assert [hit.episode_id for hit in found.hits()] == rank(
        session, "What is the name of Caroline's daughter?"
    )
    assert created[size // 3].pk not in {hit.episode_id for hit in found.hits()}  # no word in common


def test_in_a_short_session_a_word_a_few_exchanges_share_is_not_common(session):
    few = COMMON_EPISODES - 1
    items = [
        {"user_input": f"Notes on the marathon, part {n}", "response": "Keep going."} for n in range(few)
    ]
    items += [{"user_input": f"Dinner plan {n}", "response": "Soup."} for n in range(20)]
    episodes_bulk_create(session=session, items=items)
    # A third of the session holds "marathon", but fewer than COMMON_EPISODES exchanges.
    found = ranking(session, "How far is the marathon?")
    assert found.common == frozenset()
    assert found.without_common_words() == "How far is the marathon?"
    episodes_bulk_create(session=session, items=[{"user_input": "The marathon again", "response": "Yes."}])
    assert ranking(session, "How far is the marathon?").without_common_words() == "How far is the ?"


def test_another_sessions_episodes_never_appear(session, other_user):
    elsewhere = ChatSessionFactory(owner=other_user)
    episode_create(session=elsewhere, user_input="The launch code is marzipan", response="Stored.")
    mine = episode_create(session=session, user_input="I like marzipan too", response="Sweet.")
    assert rank(session, "marzipan") == [mine.pk]


def test_excluded_episodes_are_left_out(session):
    old = episode_create(session=session, user_input="Quinces ripen in autumn", response="They do.")
    recent = episode_create(session=session, user_input="More about quinces", response="Jam.")
    assert rank(session, "quince", exclude_ids=[recent.pk]) == [old.pk]


@pytest.mark.parametrize("text", ["", "   ", "the and of what is", "!!! ???"])
def test_a_query_without_searchable_words_is_refused(session, text):
    with pytest.raises(EmptyQuery):
        search_terms(text)
    with pytest.raises(EmptyQuery):
        rank(session, text)


def test_query_syntax_is_taken_as_words(session):
    episode = episode_create(session=session, user_input='He said "quote" & left | or not', response="Odd.")
    assert rank(session, "quote & | ! ( ) : * NEAR AND OR NOT") == [episode.pk]


def test_the_work_of_a_search_does_not_grow_with_the_session(owner):
    small = ChatSessionFactory(owner=owner)
    large = ChatSessionFactory(owner=owner)
    episodes_bulk_create(session=small, items=[filler(n) for n in range(10)])
    items = [filler(n) for n in range(1200)]
    items[5] = {"user_input": "The pottery class starts in March", "response": "Enjoy it."}
    episodes_bulk_create(session=large, items=items)
    counts = {}
    for session in (small, large):
        session.refresh_from_db()
        with CaptureQueriesContext(connection) as ctx:
            rank(session, "Caroline, when does the pottery class start?")
        counts[session.pk] = len(ctx.captured_queries)
    # Terms, the window, and (beyond the window) one lookup of the rare terms.
    assert counts[small.pk] <= 3
    assert counts[large.pk] <= counts[small.pk] + 1


def test_a_question_with_quotes_backslashes_and_other_scripts_is_read_word_by_word(session):
    note = episode_create(
        session=session, user_input="O'Brien kept his 日本語 notes", response="Ünïcödé too."
    )
    question = "Did O'Brien's \\ 'quote' \"keep\" the 日本語 ünïcödé notes?"
    found = ranking(session, question)
    assert found.common == frozenset()  # one episode: nothing is common
    assert found.without_common_words() == question
    assert [hit.episode_id for hit in found.hits()] == [note.pk]
    assert [question[w.start : w.end] for w in found.words][:3] == ["Did", "O", "Brien"]


def test_on_sqlite_an_owners_probe_starts_from_the_terms_matches(owner):
    """An owner may hold tens of thousands of episodes: testing each against the
    term would cost what the owner holds; the term's matches lead instead."""
    if connection.vendor != "sqlite":
        pytest.skip("about SQLite's join order")
    backend = episode_backend()
    with CaptureQueriesContext(connection) as ctx:
        backend.probe(owner_scope(owner.pk), ["greyhound"], limit=5)
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN QUERY PLAN {ctx.captured_queries[0]['sql']}")
        steps = [row[-1] for row in cursor.fetchall()]
    scans = [step for step in steps if step.startswith(("SCAN", "SEARCH"))]
    assert scans[0].startswith(f"SCAN {FTS}"), steps


def _vm_steps(run) -> int:
    """SQLite virtual-machine instructions ``run()`` executes: the work the
    query does with the rows the index hands it (counted, never timed)."""
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0

    raw = connection.connection
    raw.set_progress_handler(count, 1)
    try:
        run()
    finally:
        raw.set_progress_handler(None, 1)
    return steps[0]


def test_on_sqlite_an_owners_search_does_the_same_work_however_many_others_hold_the_word(owner, other_user):
    """The owner is filtered inside the full-text lookup: 400 of another user's
    episodes holding a word change nothing the owner's search of it does, so
    its timing tells nothing of other users' words. Counted in SQLite's
    instructions (the rows the index hands the query), not timed."""
    if connection.vendor != "sqlite":
        pytest.skip("about SQLite's full-text index")
    mine = ChatSessionFactory(owner=owner)
    episodes_bulk_create(session=mine, items=[filler(n) for n in range(50)])
    theirs = ChatSessionFactory(owner=other_user)
    episodes_bulk_create(
        session=theirs, items=[{"user_input": f"greyhound races {n}", "response": "fast"} for n in range(400)]
    )
    backend = episode_backend()
    scope = owner_scope(owner.pk)
    # "greyhound": in 400 of the other user's episodes; "whippet": in nobody's.
    for method in (
        lambda term: backend.probe(scope, [term], limit=5),
        lambda term: backend.window(scope, [term], size=64),
    ):
        method("poodle")  # the first lookup of a connection also loads the index's configuration
        held = _vm_steps(lambda: method("greyhound"))
        unheld = _vm_steps(lambda: method("whippet"))
        assert held == unheld
    with CaptureQueriesContext(connection) as ctx:
        assert backend.probe(scope, ["greyhound"], limit=5) == {"greyhound": []}
    assert f'owner_id : "{owner.pk}"' in ctx.captured_queries[0]["sql"]


def test_on_sqlite_a_sessions_window_does_the_same_work_however_many_others_wrote_between_its_episodes(
    owner, other_user
):
    if connection.vendor != "sqlite":
        pytest.skip("about SQLite's full-text index")
    mine = ChatSessionFactory(owner=owner)
    theirs = ChatSessionFactory(owner=other_user)
    for n in range(20):  # the other user writes between each two of the owner's episodes
        episode_create(session=mine, user_input=f"note {n}", response="kept")
        episodes_bulk_create(
            session=theirs, items=[{"user_input": f"greyhound {n}", "response": "fast"} for _ in range(10)]
        )
    backend = episode_backend()
    scope = session_scope(mine.pk)
    backend.window(scope, ["poodle"], size=64)
    assert _vm_steps(lambda: backend.window(scope, ["greyhound"], size=64)) == _vm_steps(
        lambda: backend.window(scope, ["whippet"], size=64)
    )
