"""The search endpoints: ``GET /api/sessions/{uuid}/search/`` and ``GET /api/search/``,
with the three standard users: results and their shape, ranking, limits, bad
queries, isolation, staff, snippets with highlight offsets, bounded queries."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from sessions_app.api.serializers import EpisodeSerializer
from sessions_app.search import across
from sessions_app.services import episodes_bulk_create
from tests.factories import ChatSessionFactory, EpisodeFactory, UserFactory

pytestmark = pytest.mark.django_db


def session_url(session) -> str:
    return f"/api/sessions/{session.uuid}/search/"


ALL_URL = "/api/search/"


def filler(n: int) -> dict[str, str]:
    return {
        "user_input": f"Caroline here again, day {n}: what should I cook tonight?",
        "response": f"Caroline, a quick pasta with vegetables would do nicely on day {n}.",
    }


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user=user)
    return client


def results(client, url: str, **params) -> list[dict]:
    response = client.get(url, params)
    assert response.status_code == 200, response.content
    return response.json()["results"]


def ids(found: list[dict]) -> list[int]:
    return [item["episode"]["id"] for item in found]


@pytest.fixture
def urls(session):
    """Both endpoints, as seen by the session's owner."""
    return [session_url(session), ALL_URL]


# --- shape and ranking ----------------------------------------------------------


@pytest.mark.parametrize("which", ["session", "all"])
def test_a_result_carries_the_episode_its_session_a_snippet_and_a_rank(api_client, session, which):
    episode = EpisodeFactory(
        session=session, user_input="Where did I park the bicycle?", response="By the library."
    )
    EpisodeFactory(session=session, user_input="Unrelated chatter", response="Indeed.")
    url = session_url(session) if which == "session" else ALL_URL
    [item] = results(api_client, url, q="bicycle")
    assert set(item) == {"episode", "session", "snippet", "highlights", "rank"}
    assert item["episode"] == EpisodeSerializer(episode).data
    assert item["session"] == str(session.uuid)
    assert item["snippet"] == "Where did I park the bicycle?"
    assert item["highlights"] == [[21, 28]]
    assert isinstance(item["rank"], float) and item["rank"] > 0


@pytest.mark.parametrize("which", ["session", "all"])
def test_a_rare_word_outweighs_a_common_one(api_client, owner, session, which):
    items = [filler(n) for n in range(40)]
    items[7] = {"user_input": "I adopted a greyhound last spring", "response": "How wonderful."}
    created = episodes_bulk_create(session=session, items=items)
    if which == "all":
        # Spread over two sessions: the statistics are those of both together.
        episodes_bulk_create(session=ChatSessionFactory(owner=owner), items=[filler(n) for n in range(40)])
    url = session_url(session) if which == "session" else ALL_URL
    found = results(api_client, url, q="Caroline, what breed is the greyhound?")
    assert found[0]["episode"]["id"] == created[7].pk
    ranks = [item["rank"] for item in found]
    assert ranks == sorted(ranks, reverse=True)


def test_across_sessions_finds_every_session_of_the_caller(api_client, owner, session):
    second = ChatSessionFactory(owner=owner)
    mine = EpisodeFactory(session=session, user_input="Quinces ripen in autumn", response="They do.")
    other = EpisodeFactory(session=second, user_input="Quince jam recipe?", response="Sugar and patience.")
    found = results(api_client, ALL_URL, q="quince")
    assert {(item["episode"]["id"], item["session"]) for item in found} == {
        (mine.pk, str(session.uuid)),
        (other.pk, str(second.uuid)),
    }


def test_nothing_found_is_an_empty_list(api_client, session, urls):
    EpisodeFactory(session=session, user_input="Hello", response="Hi.")
    for url in urls:
        assert results(api_client, url, q="zeppelin") == []


# --- limit and q ---------------------------------------------------------------


def test_limit_defaults_to_20_and_may_go_up_to_100(api_client, session, urls):
    episodes_bulk_create(session=session, items=[filler(n) for n in range(105)])
    for url in urls:
        assert len(results(api_client, url, q="pasta")) == 20
        assert len(results(api_client, url, q="pasta", limit=5)) == 5
        assert len(results(api_client, url, q="pasta", limit=100)) == 100


@pytest.mark.parametrize("limit", ["0", "-1", "101", "abc", "1.5"])
def test_a_bad_limit_is_a_400_naming_limit(api_client, session, urls, limit):
    for url in urls:
        response = api_client.get(url, {"q": "pasta", "limit": limit})
        assert response.status_code == 400
        assert set(response.json()) == {"limit"}


@pytest.mark.parametrize("q", ["", "   ", "the and of what is", "!!! ???", "x" * 1001, "nul\x00byte"])
def test_a_query_with_nothing_to_search_or_too_long_is_a_400_naming_q(api_client, session, urls, q):
    EpisodeFactory(session=session, user_input="the and of what is", response="!!!")
    for url in urls:
        response = api_client.get(url, {"q": q})
        assert response.status_code == 400, (url, q)
        assert set(response.json()) == {"q"}


def test_a_missing_q_is_a_400_naming_q(api_client, urls):
    for url in urls:
        response = api_client.get(url)
        assert response.status_code == 400
        assert set(response.json()) == {"q"}


def test_a_query_of_1000_characters_is_accepted(api_client, session, urls):
    EpisodeFactory(session=session, user_input="A walrus on the beach", response="Big one.")
    q = ("walrus " * 200)[:1000]
    for url in urls:
        assert len(results(api_client, url, q=q)) == 1


def test_a_long_query_outside_ascii_goes_in_a_post_body_with_the_same_answer(api_client, session, urls):
    """1,000 characters of Russian are over 5,000 bytes percent-encoded (of
    Japanese 9,000), more than gunicorn's request line holds (4,094 bytes);
    POST takes the same query as JSON."""
    EpisodeFactory(session=session, user_input="Какая погода в Москве?", response="Солнечно.")
    q = ("погода " * 200)[:1000]
    for url in urls:
        posted = api_client.post(url, {"q": q, "limit": 5}, format="json")
        assert posted.status_code == 200, posted.content
        assert posted.json() == api_client.get(url, {"q": q, "limit": 5}).json()
        assert len(posted.json()["results"]) == 1


@pytest.mark.parametrize("body", [{}, {"q": ""}, {"q": "x" * 1001}, ["q"]], ids=["no-q", "empty", "long", "list"])
def test_a_bad_post_body_is_a_400(api_client, urls, body):
    for url in urls:
        response = api_client.post(url, body, format="json")
        assert response.status_code == 400, response.content


# --- who sees what -------------------------------------------------------------


def test_another_users_text_never_appears(api_client, other_user, session):
    elsewhere = ChatSessionFactory(owner=other_user)
    EpisodeFactory(session=elsewhere, user_input="The launch code is marzipan", response="Stored secretly.")
    mine = EpisodeFactory(session=session, user_input="I like marzipan too", response="Sweet.")
    for url in (session_url(session), ALL_URL):
        response = api_client.get(url, {"q": "marzipan launch code secretly"})
        assert response.status_code == 200
        assert ids(response.json()["results"]) == [mine.pk]
        assert b"launch" not in response.content and b"secretly" not in response.content


def test_another_users_episodes_weigh_on_no_rank(api_client, other_user, session):
    EpisodeFactory(session=session, user_input="I like marzipan", response="Sweet.")
    EpisodeFactory(session=session, user_input="Tea or coffee?", response="Tea.")
    before = [results(api_client, url, q="marzipan")[0]["rank"] for url in (session_url(session), ALL_URL)]
    elsewhere = ChatSessionFactory(owner=other_user)
    episodes_bulk_create(
        session=elsewhere, items=[{"user_input": f"marzipan {n}", "response": "again"} for n in range(30)]
    )
    after = [results(api_client, url, q="marzipan")[0]["rank"] for url in (session_url(session), ALL_URL)]
    assert after == before


def test_another_users_session_is_a_404_like_an_unknown_one(api_client, other_client, session):
    EpisodeFactory(session=session, user_input="Private walrus notes", response="Noted.")
    expected = api_client.get("/api/sessions/00000000-0000-0000-0000-000000000000/search/", {"q": "walrus"})
    assert expected.status_code == 404
    for url in (session_url(session), "/api/sessions/not-a-uuid/search/"):
        response = other_client.get(url, {"q": "walrus"})
        assert response.status_code == 404
        assert response.json() == expected.json()
    # Even with a bad query: the session is checked first.
    assert other_client.get(session_url(session), {"q": ""}).status_code == 404
    assert results(other_client, ALL_URL, q="walrus") == []


def test_staff_search_every_session(staff_client, session, other_session):
    mine = EpisodeFactory(session=session, user_input="The walrus is mine", response="Yes.")
    theirs = EpisodeFactory(session=other_session, user_input="A walrus of theirs", response="Yes.")
    assert set(ids(results(staff_client, ALL_URL, q="walrus"))) == {mine.pk, theirs.pk}
    assert ids(results(staff_client, session_url(other_session), q="walrus")) == [theirs.pk]


def test_across_sessions_each_sees_their_own_and_staff_with_the_view_permission_see_all(
    api_client, other_client, other_user, session
):
    """Owner, another user, staff without and with the view permission, each with a walrus."""
    plain = UserFactory(username="plainstaff", is_staff=True)
    viewer = UserFactory(username="viewer", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_chatsession"))
    walrus = {
        user.username: EpisodeFactory(
            session=ChatSessionFactory(owner=user), user_input=f"{user.username}'s walrus", response="Hm."
        ).pk
        for user in (other_user, plain, viewer)
    }
    walrus["owner"] = EpisodeFactory(session=session, user_input="My walrus", response="Yes.").pk
    clients = {"owner": api_client, "other": other_client, "plainstaff": client_for(plain)}
    for name, client in clients.items():
        assert ids(results(client, ALL_URL, q="walrus")) == [walrus[name]], name
    assert set(ids(results(client_for(viewer), ALL_URL, q="walrus"))) == set(walrus.values())


def test_across_many_sessions_an_old_rare_word_is_found_and_common_words_rank_below_it(api_client, owner):
    old = ChatSessionFactory(owner=owner)
    found = EpisodeFactory(session=old, user_input="We adopted a greyhound named Pixel", response="Lovely.")
    for n in range(120):  # newer sessions: the owner's newest episodes, none with the rare word
        EpisodeFactory(session=ChatSessionFactory(owner=owner), **filler(n))
    hits = results(api_client, ALL_URL, q="Caroline, what is the greyhound called?")
    assert hits[0]["episode"]["id"] == found.pk
    assert hits[0]["session"] == str(old.uuid)
    assert len(hits) == 20  # and Caroline's episodes after it


def test_past_the_sessions_it_counts_the_search_still_reads_every_episode(api_client, owner, monkeypatch):
    """Statistics from the newest sessions only (here 2, all empty): the window
    full of the older session's episodes is not taken for the whole scope."""
    monkeypatch.setattr(across, "STATS_SESSIONS", 2)
    old = ChatSessionFactory(owner=owner)
    items = [filler(n) for n in range(100)]
    items[3] = {"user_input": "The pottery class starts in March", "response": "Enjoy it."}
    created = episodes_bulk_create(session=old, items=items)
    for _ in range(2):
        ChatSessionFactory(owner=owner)
    assert ids(results(api_client, ALL_URL, q="pottery"))[:1] == [created[3].pk]


def test_anonymous_callers_are_refused(anon_client, session, urls):
    for url in urls:
        assert anon_client.get(url, {"q": "walrus"}).status_code in (401, 403)


# --- snippets ------------------------------------------------------------------


# (user input, response, query, text the snippet shows literally, the matched words)
HOSTILE = [
    ("<b>Volcanoes</b> erupt <script>alert(1)</script>", "", "volcano", "<b>Volcanoes</b>", ["volcanoes"]),
    (
        'He said "volcano" NEAR( lava * : OR AND',
        "",
        'volcano NEAR( " * :',
        '"volcano" NEAR(',
        ["volcano", "near"],
    ),
    ("\x02 volcanoes \x03 and \x1e\x1f markers", "", "volcano", "\x02 volcanoes \x03", ["volcanoes"]),
    (
        "Nothing here",
        "The <i>lava</i> &amp; volcanoes answer",
        "volcanoes",
        "The <i>lava</i> &amp;",
        ["volcanoes"],
    ),
]


@pytest.mark.parametrize("user_input,response,q,literal,words", HOSTILE)
def test_the_snippet_is_the_text_itself_with_offsets_of_the_matched_words(
    api_client, session, urls, user_input, response, q, literal, words
):
    EpisodeFactory(session=session, user_input=user_input, response=response)
    for url in urls:
        [item] = results(api_client, url, q=q)
        snippet = item["snippet"]
        assert literal in snippet  # markup and markers come back as the literal text they were
        assert snippet in (user_input, response)
        for start, end in item["highlights"]:
            assert 0 <= start < end <= len(snippet)
        assert [snippet[start:end].lower() for start, end in item["highlights"]] == words


def test_a_long_text_is_cut_around_the_first_match(api_client, session, urls):
    text = (
        " ".join(f"word{n}" for n in range(100))
        + " the Greyhounds ran "
        + " ".join(f"tail{n}" for n in range(100))
    )
    EpisodeFactory(session=session, user_input=text, response="Indeed.")
    for url in urls:
        [item] = results(api_client, url, q="greyhound")
        snippet = item["snippet"]
        assert len(snippet) <= 202
        assert snippet.startswith("…") and snippet.endswith("…")
        assert snippet.strip("…") in text
        [[start, end]] = item["highlights"]
        assert snippet[start:end] == "Greyhounds"


def test_every_matched_word_is_highlighted(api_client, session):
    EpisodeFactory(session=session, user_input="Paris in spring; Paris in autumn", response="Lovely.")
    [item] = results(api_client, session_url(session), q="paris autumn")
    words = [item["snippet"][s:e] for s, e in item["highlights"]]
    assert words == ["Paris", "Paris", "autumn"]


# --- cost ----------------------------------------------------------------------


def count_queries(client, url: str, q: str) -> int:
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url, {"q": q}).status_code == 200
    return len(ctx.captured_queries)


def test_queries_do_not_grow_with_the_session(api_client, owner):
    small = ChatSessionFactory(owner=owner)
    large = ChatSessionFactory(owner=owner)
    episodes_bulk_create(session=small, items=[filler(n) for n in range(10)])
    items = [filler(n) for n in range(500)]
    items[5] = {"user_input": "The pottery class starts in March", "response": "Enjoy it."}
    items[-5] = {"user_input": "Pottery again next year", "response": "Good."}
    episodes_bulk_create(session=large, items=items)
    small_items = [filler(n) for n in range(10)]
    small_items[5] = items[5]
    q = "Caroline, when does the pottery class start?"
    small_count = count_queries(api_client, session_url(small), q)
    large_count = count_queries(api_client, session_url(large), q)
    # Past rank_session's window (200 episodes) the rare terms take one index lookup more.
    assert large_count <= small_count + 1
    assert large_count <= 8
    across_before = count_queries(api_client, ALL_URL, q)
    episodes_bulk_create(session=small, items=[filler(n) for n in range(500)])
    assert count_queries(api_client, ALL_URL, q) == across_before


def test_the_search_across_sessions_costs_as_many_queries_for_many_sessions_as_for_few(api_client, owner):
    q = "Caroline, when does the pottery class start?"
    EpisodeFactory(session=ChatSessionFactory(owner=owner), user_input="Pottery in March", response="Ok.")
    for n in range(70):  # more than the window: the rare word is looked up in the index
        EpisodeFactory(session=ChatSessionFactory(owner=owner), **filler(n))
    with CaptureQueriesContext(connection) as few:
        assert results(api_client, ALL_URL, q=q)[0]["episode"]["user_input"] == "Pottery in March"
    for n in range(200):
        EpisodeFactory(session=ChatSessionFactory(owner=owner), **filler(n))
    with CaptureQueriesContext(connection) as many:
        assert results(api_client, ALL_URL, q=q)[0]["episode"]["user_input"] == "Pottery in March"
    assert len(many.captured_queries) == len(few.captured_queries)
    # No query names the sessions: the longest is as long with 271 as with 71.
    longest = [max(len(query["sql"]) for query in ctx.captured_queries) for ctx in (few, many)]
    assert longest[1] <= longest[0] + 20


def test_the_schema_documents_both_endpoints(anon_client):
    schema = anon_client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    for path in ("/api/sessions/{uuid}/search/", "/api/search/"):
        operation = schema["paths"][path]["get"]
        assert {p["name"] for p in operation["parameters"]} >= {"q", "limit"}
        assert set(operation["responses"]) >= {"200", "400"}
        posted = schema["paths"][path]["post"]
        assert "requestBody" in posted and "q" not in {p["name"] for p in posted.get("parameters", [])}
    result = schema["components"]["schemas"]["SearchResult"]["properties"]
    assert set(result) == {"episode", "session", "snippet", "highlights", "rank"}
