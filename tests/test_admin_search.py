"""The admin's episode search goes through the full-text index: stemmed
words, every word required, hostile query syntax taken as plain words, a
bounded number of ids, and a constant number of queries."""

from __future__ import annotations

import pytest
from django.contrib.messages import get_messages
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from sessions_app import admin as sessions_admin
from sessions_app.search.admin_lookup import EmptyQuery, matching_episode_ids
from tests.factories import ChatSessionFactory, EpisodeFactory

pytestmark = pytest.mark.django_db

EPISODES_URL = reverse("admin:sessions_app_episode_changelist")


@pytest.fixture
def staff_browser(staff_user) -> Client:
    client = Client()
    client.force_login(staff_user)
    return client


def found(client: Client, query: str, **params: str) -> set[int]:
    response = client.get(EPISODES_URL, {"q": query, **params})
    assert response.status_code == 200
    return {e.pk for e in response.context["cl"].result_list}


def shown_messages(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def test_a_stemmed_word_finds_the_episode(staff_browser):
    growing = EpisodeFactory(user_input="The gardener is growing rutabagas.", response="They need cold.")
    EpisodeFactory(user_input="Unrelated", response="Nothing here.")
    assert found(staff_browser, "grows") == {growing.pk}
    assert found(staff_browser, "RUTABAGA") == {growing.pk}


def test_every_word_of_the_query_must_appear(staff_browser):
    both = EpisodeFactory(user_input="Rutabagas and carrots?", response="Both are roots.")
    EpisodeFactory(user_input="Rutabagas only", response="Yes.")
    EpisodeFactory(user_input="Carrots only", response="Yes.")
    assert found(staff_browser, "rutabaga carrot") == {both.pk}


def test_search_combines_with_the_session_filter(staff_browser):
    session = ChatSessionFactory()
    mine = EpisodeFactory(session=session, user_input="Tell me about kites.", response="They fly.")
    EpisodeFactory(user_input="Kites again", response="Still flying.")
    assert found(staff_browser, "kite", session=str(session.uuid)) == {mine.pk}


@pytest.mark.parametrize(
    "query",
    [
        '"unbalanced',
        "kite OR",
        "NEAR(kite fly",
        "kite*",
        "*",
        "kite & | ! :* <-> ( )",
        "'); DROP TABLE sessions_app_episode; --",
        "user_input:kite",
        "^kite -fly +wind",
        "kite\x00fly",
        "kite " * 500,
        "\\' \\\\ ''",
    ],
)
def test_hostile_query_syntax_is_searched_as_plain_words(staff_browser, query):
    kite = EpisodeFactory(user_input="A kite in the wind", response="It flies.")
    result = found(staff_browser, query)
    if query.split() and query.split()[0].lower().startswith("kite"):
        assert kite.pk in result


@pytest.mark.parametrize("query", ["the and of", "?!", "  -  "])
def test_a_query_with_nothing_to_search_for_shows_no_rows_and_says_why(staff_browser, query):
    EpisodeFactory(user_input="The and of", response="Nothing but stop words.")
    response = staff_browser.get(EPISODES_URL, {"q": query})
    assert response.status_code == 200
    assert list(response.context["cl"].result_list) == []
    assert any("Nothing to search for" in m for m in shown_messages(response))


def test_an_empty_query_lists_everything(staff_browser):
    episodes = EpisodeFactory.create_batch(3)
    assert found(staff_browser, "   ") == {e.pk for e in episodes}


def test_only_the_newest_matches_are_shown_past_the_limit(staff_browser, monkeypatch):
    monkeypatch.setattr(sessions_admin, "EPISODE_SEARCH_LIMIT", 3)
    kites = [EpisodeFactory(user_input=f"Kite number {n}", response="Up it goes.") for n in range(5)]
    response = staff_browser.get(EPISODES_URL, {"q": "kite"})
    assert {e.pk for e in response.context["cl"].result_list} == {e.pk for e in kites[-3:]}
    assert any("More than 3 episodes match" in m for m in shown_messages(response))


def test_search_query_count_does_not_grow_and_no_text_is_scanned(staff_browser):
    def queries() -> list[str]:
        with CaptureQueriesContext(connection) as ctx:
            assert staff_browser.get(EPISODES_URL, {"q": "kite"}).status_code == 200
        return [q["sql"] for q in ctx.captured_queries]

    EpisodeFactory.create_batch(2, user_input="A kite", response="Flies.")
    small = queries()
    EpisodeFactory.create_batch(30, user_input="Another kite", response="Flies too.")
    ChatSessionFactory.create_batch(3)
    large = queries()
    assert len(small) == len(large)
    assert not [sql for sql in large if "LIKE" in sql.upper()]
    with CaptureQueriesContext(connection) as plain:
        staff_browser.get(EPISODES_URL)
    # The search adds at most two queries: the query's terms (PostgreSQL) and the index lookup.
    assert len(large) <= len(plain.captured_queries) + 2


# --- the lookup itself ----------------------------------------------------------


def test_lookup_returns_newest_first_and_is_bounded():
    kites = [EpisodeFactory(user_input=f"Kite {n}", response="Flying.") for n in range(4)]
    assert matching_episode_ids("kites") == [e.pk for e in reversed(kites)]
    assert matching_episode_ids("kites", limit=2) == [kites[3].pk, kites[2].pk]


def test_lookup_matches_all_terms_or_any():
    both = EpisodeFactory(user_input="kite and wind", response="ok")
    kite = EpisodeFactory(user_input="kite alone", response="ok")
    wind = EpisodeFactory(user_input="wind alone", response="ok")
    EpisodeFactory(user_input="neither", response="ok")
    assert matching_episode_ids("kite wind") == [both.pk]
    assert matching_episode_ids("kite wind", match_all=False) == [wind.pk, kite.pk, both.pk]


def test_lookup_without_terms_raises_empty_query():
    with pytest.raises(EmptyQuery):
        matching_episode_ids("the of and")


def test_a_number_finds_the_text_that_holds_it_never_an_owner_of_that_id():
    """The SQLite index also holds each episode's owner id; a query's words
    are looked for in the text only."""
    session = ChatSessionFactory()
    plain = EpisodeFactory(session=session, user_input="nothing numeric", response="here")
    numbered = EpisodeFactory(user_input=f"room {session.owner_id} is free", response="ok")
    assert matching_episode_ids(str(session.owner_id), match_all=False) == [numbered.pk]
    assert plain.pk in matching_episode_ids("numeric")
