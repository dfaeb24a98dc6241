"""Episodes: oldest-first cursor pages, single and bulk writes, the tail
after an id, and constant-cost stats; who sees what."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections
from django.db.models.signals import post_save
from django.test.utils import CaptureQueriesContext

from sessions_app.errors import SessionNotFound
from sessions_app.models import ChatSession, Episode
from sessions_app.services import episode_create, episode_create_for_user, episodes_bulk_create
from sessions_app.tokens import count_episode_tokens
from tests.factories import ChatSessionFactory, EpisodeFactory
from tests.process_support import require_or_skip

pytestmark = pytest.mark.django_db

EPISODE_FIELDS = {"id", "position", "user_input", "response", "token_count", "metadata", "created_at"}


def url(session, tail: str = "episodes/") -> str:
    return f"/api/sessions/{session.uuid}/{tail}"


def counters_match_aggregate(session) -> bool:
    row = ChatSession.objects.with_aggregate_stats().get(pk=session.pk)
    fresh = ChatSession.objects.get(pk=session.pk)
    counters = (fresh.cached_episode_count, fresh.cached_total_tokens, fresh.cached_last_episode_id)
    return counters == (row.episode_count, row.total_tokens, row.last_episode_id)


# --- reading ----------------------------------------------------------------


def test_list_oldest_first(api_client, session, episodes):
    body = api_client.get(url(session)).json()
    assert [row["id"] for row in body["results"]] == [e.pk for e in episodes]
    assert set(body["results"][0]) == EPISODE_FIELDS


def test_cursor_pagination_walks_every_episode_once(api_client, session, settings):
    settings.API_PAGE_SIZE = 4
    made = EpisodeFactory.create_batch(10, session=session)
    seen, next_url = [], url(session)
    while next_url:
        body = api_client.get(next_url).json()
        assert len(body["results"]) <= 4
        seen += [row["id"] for row in body["results"]]
        next_url = body["next"]
    assert seen == [e.pk for e in made]


def test_page_size_parameter_is_capped(api_client, session, settings):
    settings.API_MAX_PAGE_SIZE = 3
    EpisodeFactory.create_batch(5, session=session)
    assert len(api_client.get(url(session), {"page_size": 100}).json()["results"]) == 3


@pytest.mark.parametrize("cursor", ["garbage", "cD1hYmM=", "cD0tMQ=="])  # raw, p=abc, p=-1
def test_forged_cursor_is_404(api_client, session, episodes, cursor):
    assert api_client.get(url(session), {"cursor": cursor}).status_code == 404


def test_list_query_count_does_not_grow(api_client, session):
    def count_queries() -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert api_client.get(url(session)).status_code == 200
        return len(ctx.captured_queries)

    EpisodeFactory.create_batch(2, session=session)
    few = count_queries()
    EpisodeFactory.create_batch(30, session=session)
    # The session (with the visibility check) and one page.
    assert few == count_queries() == 2


def test_since_returns_the_tail(api_client, session, episodes):
    body = api_client.get(url(session, f"episodes/since/{episodes[0].pk}/")).json()
    assert [row["id"] for row in body["results"]] == [e.pk for e in episodes[1:]]
    assert api_client.get(url(session, "episodes/since/0/")).json()["results"][0]["id"] == episodes[0].pk


def test_since_is_paginated(api_client, session, settings):
    settings.API_PAGE_SIZE = 2
    made = EpisodeFactory.create_batch(5, session=session)
    body = api_client.get(url(session, f"episodes/since/{made[0].pk}/")).json()
    assert [row["id"] for row in body["results"]] == [made[1].pk, made[2].pk]
    assert body["next"]


def test_since_query_count_does_not_grow(api_client, session):
    def count_queries() -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert api_client.get(url(session, "episodes/since/0/")).status_code == 200
        return len(ctx.captured_queries)

    EpisodeFactory.create_batch(2, session=session)
    few = count_queries()
    EpisodeFactory.create_batch(30, session=session)
    assert few == count_queries() == 2


@pytest.mark.parametrize("bad", ["abc", "-1", "1.5", str(2**63), "1e3"])
def test_since_bad_after_id_is_400_naming_it(api_client, session, bad):
    response = api_client.get(url(session, f"episodes/since/{bad}/"))
    assert response.status_code == 400
    assert "after_id" in response.json()


def test_stats(api_client, session, episodes):
    with CaptureQueriesContext(connection) as ctx:
        body = api_client.get(url(session, "episode-stats/")).json()
    assert body == {
        "episode_count": 3,
        "total_tokens": sum(e.token_count for e in episodes),
        "last_episode_id": episodes[-1].pk,
    }
    assert len(ctx.captured_queries) == 2  # the session, then the counters and the last id


def test_stats_of_empty_session(api_client, session):
    body = api_client.get(url(session, "episode-stats/")).json()
    assert body == {"episode_count": 0, "total_tokens": 0, "last_episode_id": None}


# --- writing one ------------------------------------------------------------


def test_post_one(api_client, session):
    payload = {"user_input": "What is a cursor?", "response": "A position in a list.", "metadata": {"m": 1}}
    response = api_client.post(url(session), payload, format="json")
    assert response.status_code == 201
    body = response.json()
    assert set(body) == EPISODE_FIELDS
    assert body["token_count"] == count_episode_tokens(payload["user_input"], payload["response"])
    episode = Episode.objects.get(pk=body["id"])
    assert (episode.session_id, episode.metadata) == (session.pk, {"m": 1})
    assert counters_match_aggregate(session)


@pytest.mark.parametrize(
    "payload",
    [
        {"user_input": "Plain?", "response": ""},
        {"user_input": "Ünïcödé ✓ 😀", "response": "  kept as written  ", "metadata": {"k": ["é", 1]}},
        {"user_input": "extra keys", "response": "ignored", "token_count": 5, "id": 1},
    ],
)
def test_post_answers_what_a_read_shows(api_client, session, payload):
    written = api_client.post(url(session), payload, format="json")
    assert written.status_code == 201
    (listed,) = api_client.get(url(session)).json()["results"]
    assert written.json() == listed
    assert (listed["user_input"], listed["response"]) == (payload["user_input"], payload["response"])
    assert listed["metadata"] == payload.get("metadata", {})


def test_post_ignores_a_client_token_count(api_client, session):
    body = api_client.post(
        url(session), {"user_input": "hi", "response": "hello", "token_count": 999}, format="json"
    ).json()
    assert body["token_count"] == count_episode_tokens("hi", "hello")


def test_post_one_query_count(api_client, session):
    payload = {"user_input": "Question?", "response": "Answer."}
    with CaptureQueriesContext(connection) as ctx:
        assert api_client.post(url(session), payload, format="json").status_code == 201
    sql = [q["sql"].split()[0].upper() for q in ctx.captured_queries]
    if connection.vendor == "postgresql":
        # Visibility check, counters (the newest episode too) and INSERT in one statement.
        assert sql == ["WITH"], sql
    else:
        # Session lookup with the visibility check, then (inside the test's
        # transaction, hence the savepoint pair) the counter UPDATE, the
        # INSERT and the newest episode recorded on the session row.
        assert sql == ["SELECT", "SAVEPOINT", "UPDATE", "INSERT", "UPDATE", "RELEASE"], sql


def test_post_one_triggers_summarization_after_commit(api_client, session, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        api_client.post(url(session), {"user_input": "q", "response": "a"}, format="json")
    assert len(callbacks) == 1


def test_post_one_sends_post_save_once(api_client, session):
    seen = []

    def receiver(sender, instance, created, **kwargs):
        seen.append((instance.pk, instance.session_id, created))

    post_save.connect(receiver, sender=Episode, dispatch_uid="test-episode-post-save")
    try:
        body = api_client.post(url(session), {"user_input": "q", "response": "a"}, format="json").json()
    finally:
        post_save.disconnect(dispatch_uid="test-episode-post-save", sender=Episode)
    assert seen == [(body["id"], session.pk, True)]


@pytest.mark.django_db(transaction=True)
def test_concurrent_single_writes_keep_counters_exact(owner):
    if connection.vendor != "postgresql":
        require_or_skip("concurrent writers need PostgreSQL (SQLite's test database is one shared-cache file)")
    session = ChatSessionFactory(owner=owner)
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            for i in range(5):
                episode_create_for_user(
                    user=owner, session_uuid=session.uuid, user_input=f"q{n}-{i}", response="a" * (n + i + 1)
                )
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert counters_match_aggregate(session)
    assert ChatSession.objects.with_aggregate_stats().get(pk=session.pk).episode_count == 20
    # Distinct positions, in the order of the ids (both given under the row lock).
    numbered = list(Episode.objects.for_session(session.pk).values_list("position", flat=True))
    assert numbered == list(range(1, 21))


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"response": "no question"}, "user_input"),
        ({"user_input": "", "response": "x"}, "user_input"),
        ({"user_input": "x"}, "response"),
        ({"user_input": "nul\x00", "response": "x"}, "user_input"),
        ({"user_input": "x", "response": "y", "metadata": "text"}, "metadata"),
        ({"user_input": 5, "response": {"a": 1}}, "response"),
    ],
)
def test_post_bad_fields_are_400_naming_them(api_client, session, payload, field):
    response = api_client.post(url(session), payload, format="json")
    assert response.status_code == 400
    assert field in response.json()
    assert not Episode.objects.exists()


def test_lone_surrogate_is_400_naming_the_field(api_client, session):
    body = '{"user_input": "x", "response": "broken \\ud800 text"}'
    response = api_client.post(url(session), data=body, content_type="application/json")
    assert response.status_code == 400
    assert "response" in response.json()


def test_unstorable_text_is_reported_once(api_client, session):
    response = api_client.post(url(session), {"user_input": "nul\x00", "response": "x"}, format="json")
    assert response.status_code == 400
    assert response.json() == {"user_input": ["Null characters are not allowed."]}
    body = '{"user_input": "x", "response": "broken \\ud800 text"}'
    response = api_client.post(url(session), data=body, content_type="application/json")
    assert response.status_code == 400
    assert list(response.json()) == ["response"] and len(response.json()["response"]) == 1


def test_text_size_limit(api_client, session, settings):
    settings.EPISODE_MAX_CHARS = 10
    response = api_client.post(url(session), {"user_input": "x" * 11, "response": "ok"}, format="json")
    assert response.status_code == 400 and "user_input" in response.json()
    response = api_client.post(url(session), {"user_input": "x" * 10, "response": "ok"}, format="json")
    assert response.status_code == 201


@pytest.mark.parametrize("body", ['{"user_input": ', "[1, 2", "NaN", '{"a": NaN}', "\xff"])
def test_malformed_json_is_400(api_client, session, body):
    response = api_client.post(url(session), data=body, content_type="application/json")
    assert response.status_code == 400


@pytest.mark.parametrize(
    ("accept", "code"),
    [(None, 201), ("*/*", 201), ("application/json", 201), ("application/json; indent=2", 201), ("text/html", 406)],
)
def test_write_answers_json_or_406(api_client, session, accept, code):
    headers = {} if accept is None else {"HTTP_ACCEPT": accept}
    response = api_client.post(url(session), {"user_input": "q", "response": "a"}, format="json", **headers)
    assert response.status_code == code
    if code == 201:
        assert response["Content-Type"] == "application/json" and response.json()["user_input"] == "q"


def test_non_json_body_is_415(api_client, session):
    response = api_client.post(url(session), data="user_input=x", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 415


# --- writing many -----------------------------------------------------------


def items(n: int) -> list[dict]:
    return [{"user_input": f"Question {i}?", "response": f"Answer {i}."} for i in range(n)]


def test_bulk_creates_in_order(api_client, session):
    response = api_client.post(url(session), items(5), format="json")
    assert response.status_code == 201
    body = response.json()
    assert [row["user_input"] for row in body] == [f"Question {i}?" for i in range(5)]
    assert [row["id"] for row in body] == sorted(row["id"] for row in body)
    assert list(Episode.objects.filter(session=session).values_list("pk", flat=True)) == [r["id"] for r in body]
    assert counters_match_aggregate(session)


def test_positions_in_every_episode_payload(api_client, session):
    """Single and bulk writes answer with each episode's position; the list and
    the tail read them back; a deleted one leaves its number unused."""
    one = api_client.post(url(session), {"user_input": "q", "response": "a"}, format="json").json()
    many = api_client.post(url(session), items(3), format="json").json()
    assert [one["position"]] + [row["position"] for row in many] == [1, 2, 3, 4]
    Episode.objects.filter(pk=many[-1]["id"]).delete()
    again = api_client.post(url(session), {"user_input": "q", "response": "a"}, format="json").json()
    assert again["position"] == 5
    listed = api_client.get(url(session)).json()["results"]
    assert [(row["id"], row["position"]) for row in listed] == [
        (one["id"], 1), (many[0]["id"], 2), (many[1]["id"], 3), (again["id"], 5)
    ]  # fmt: skip
    tail = api_client.get(url(session, f"episodes/since/{many[1]['id']}/")).json()["results"]
    assert [row["position"] for row in tail] == [5]


def test_bulk_is_all_or_nothing_with_positional_errors(api_client, session, episodes):
    batch = items(4)
    batch[1]["user_input"] = ""
    batch[3] = {"response": "missing question"}
    response = api_client.post(url(session), batch, format="json")
    assert response.status_code == 400
    # Errors keyed by the position of each invalid item.
    errors = response.json()
    assert set(errors) == {"1", "3"}
    assert "user_input" in errors["1"] and "user_input" in errors["3"]
    assert Episode.objects.filter(session=session).count() == 3
    assert counters_match_aggregate(session)


def test_bulk_rejects_non_objects_by_position(api_client, session):
    response = api_client.post(url(session), [items(1)[0], "text"], format="json")
    assert response.status_code == 400
    assert set(response.json()) == {"1"}


def test_bulk_limit(api_client, session, settings):
    settings.API_BULK_MAX_EPISODES = 3
    response = api_client.post(url(session), items(4), format="json")
    assert response.status_code == 400 and "non_field_errors" in response.json()
    assert api_client.post(url(session), items(3), format="json").status_code == 201


def test_bulk_empty_list_is_400(api_client, session):
    assert api_client.post(url(session), [], format="json").status_code == 400


def test_bulk_query_count_does_not_grow_with_the_batch(api_client, session):
    def count_queries(n: int) -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert api_client.post(url(session), items(n), format="json").status_code == 201
        return len(ctx.captured_queries)

    # Session, savepoint, one counter UPDATE, one multi-row INSERT, the newest
    # episode recorded on the session row, release.
    assert count_queries(2) == count_queries(40) == 6


def test_session_deleted_before_a_write_is_404_not_an_integrity_error(owner):
    """The session was found, then deleted (another tab) before its episodes were written."""
    session = ChatSessionFactory(owner=owner)
    found = ChatSession.objects.get(pk=session.pk)
    session.delete()
    with pytest.raises(SessionNotFound):
        episode_create(session=found, user_input="q", response="a")
    with pytest.raises(SessionNotFound):
        episodes_bulk_create(session=found, items=items(3))
    assert not Episode.objects.exists()


def test_bulk_requests_summarization_once(api_client, session, monkeypatch):
    calls = []
    monkeypatch.setattr(
        "summaries.signals.request_run", lambda **kwargs: calls.append(kwargs)
    )
    api_client.post(url(session), items(7), format="json")
    # One request for the batch, which also sends the encoding task for its vectors.
    # No message of the batch states a note: no extraction is asked for.
    assert calls == [{"session_pk": session.pk, "batch": True, "notes": False}]


# --- who sees what ------------------------------------------------------------

ENDPOINTS = [
    ("get", "episodes/", None, 200),
    ("post", "episodes/", {"user_input": "q", "response": "a"}, 201),
    ("post", "episodes/", [{"user_input": "q", "response": "a"}], 201),
    ("get", "episodes/since/0/", None, 200),
    ("get", "episode-stats/", None, 200),
]


@pytest.mark.parametrize(("method", "tail", "payload", "ok"), ENDPOINTS)
def test_isolation(api_client, other_client, staff_client, anon_client, session, method, tail, payload, ok):
    def call(client):
        return getattr(client, method)(url(session, tail), payload, format="json")

    before = Episode.objects.count()
    assert call(other_client).status_code == 404
    assert call(anon_client).status_code in (401, 403)
    assert Episode.objects.count() == before
    assert call(api_client).status_code == ok
    assert call(staff_client).status_code == ok


@pytest.mark.parametrize("tail", ["episodes/", "episodes/since/0/", "episode-stats/"])
def test_unknown_session_is_404(api_client, tail):
    assert api_client.get(f"/api/sessions/not-a-uuid/{tail}").status_code == 404
    assert api_client.get(f"/api/sessions/00000000-0000-0000-0000-000000000000/{tail}").status_code == 404


def test_body_over_the_upload_limit_is_413(api_client, session, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2048
    response = api_client.post(url(session), items(100), format="json")
    assert response.status_code == 413
    assert not Episode.objects.exists()


def test_deeply_nested_json_is_400(api_client, session):
    body = '{"user_input": "q", "response": "a", "metadata": {"a": ' + "[" * 100_000 + "]" * 100_000 + "}}"
    response = api_client.post(url(session), data=body, content_type="application/json")
    assert response.status_code == 400
