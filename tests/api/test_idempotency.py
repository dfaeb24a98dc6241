"""``Idempotency-Key`` on the API's writes: a retry with the same key (same
user, same endpoint, same body) gets the first answer back, without a new
episode or model call; the same key with another request is a 422; a key
still being answered is a 409 with ``Retry-After``; keys are per user and
kept for ``IDEMPOTENCY_KEY_TTL_SECONDS``."""

from __future__ import annotations

import json
import threading
from datetime import timedelta

import pytest
from django.db import connection, connections
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.authtoken.models import Token

from sessions_app.idempotency import (
    chat_lease_seconds,
    idempotency_keys_purge,
    key_claim,
    request_fingerprint,
)
from sessions_app.models import ChatSession, Episode, IdempotencyKey
from summaries.erasure import user_memory_erase
from tests.factories import ChatSessionFactory, UserFactory

pytestmark = pytest.mark.django_db

SSE = "text/event-stream"


def episodes_url(session) -> str:
    return f"/api/sessions/{session.uuid}/episodes/"


def chat_url(session) -> str:
    return f"/api/sessions/{session.uuid}/chat/"


def post(client, url, body, key=None, **extra):
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key is not None else {}
    return client.post(url, body, format="json", **headers, **extra)


def model_calls(server) -> int:
    return sum(1 for r in server.requests if r["path"] in ("/api/chat", "/v1/chat/completions"))


# --- writes without a model call ---------------------------------------------------


def test_episode_retry_with_the_same_key_returns_the_first_answer(api_client, session):
    body = {"user_input": "Hello", "response": "Hi"}
    first = post(api_client, episodes_url(session), body, key="write-1")
    again = post(api_client, episodes_url(session), body, key="write-1")
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert again["Idempotent-Replayed"] == "true" and "Idempotent-Replayed" not in first
    assert Episode.objects.filter(session=session).count() == 1


def test_a_key_costs_its_claim_and_its_answer_and_nothing_more(api_client, session):
    """The kept answer names the session the path names (so deleting it drops
    the answer) in the statement that keeps it: no lookup of its own."""

    def statements(key: str | None) -> list[str]:
        with CaptureQueriesContext(connection) as queries:
            answer = post(api_client, episodes_url(session), {"user_input": "Hi", "response": "Yo"}, key=key)
        assert answer.status_code == 201
        return [q["sql"] for q in queries.captured_queries if "SAVEPOINT" not in q["sql"].upper()]

    plain, keyed = statements(None), statements("write-cost")
    assert len(keyed) - len(plain) == 2  # the claim's insert and the answer's update
    assert IdempotencyKey.objects.get(key="write-cost").session_id == session.pk


def test_bulk_retry_with_the_same_key_stores_the_batch_once(api_client, session):
    body = [{"user_input": f"q{n}", "response": f"a{n}"} for n in range(3)]
    first = post(api_client, episodes_url(session), body, key="bulk-1")
    again = post(api_client, episodes_url(session), body, key="bulk-1")
    assert first.status_code == again.status_code == 201
    assert [e["id"] for e in again.json()] == [e["id"] for e in first.json()]
    assert Episode.objects.filter(session=session).count() == 3


def test_session_create_retry_makes_one_session(api_client, owner):
    first = post(api_client, "/api/sessions/", {"title": "Once"}, key="session-1")
    again = post(api_client, "/api/sessions/", {"title": "Once"}, key="session-1")
    assert first.status_code == again.status_code == 201
    assert again.json()["id"] == first.json()["id"]
    assert ChatSession.objects.filter(owner=owner, title="Once").count() == 1


def test_without_a_key_every_write_is_a_new_one(api_client, session):
    body = {"user_input": "Hello", "response": "Hi"}
    post(api_client, episodes_url(session), body)
    post(api_client, episodes_url(session), body)
    assert Episode.objects.filter(session=session).count() == 2
    assert not IdempotencyKey.objects.exists()


def test_same_key_with_another_body_is_a_422_and_stores_nothing(api_client, session):
    post(api_client, episodes_url(session), {"user_input": "Hello", "response": "Hi"}, key="k")
    other = post(api_client, episodes_url(session), {"user_input": "Bye", "response": "Ciao"}, key="k")
    assert other.status_code == 422
    assert "different request" in other.json()["detail"]
    assert Episode.objects.filter(session=session).count() == 1


def test_same_key_on_another_endpoint_is_a_422(api_client, session, owner):
    post(api_client, episodes_url(session), {"user_input": "Hello", "response": "Hi"}, key="k")
    other_session = ChatSessionFactory(owner=owner)
    other = post(api_client, episodes_url(other_session), {"user_input": "Hello", "response": "Hi"}, key="k")
    assert other.status_code == 422
    assert not Episode.objects.filter(session=other_session).exists()


def test_keys_are_per_user(api_client, other_client, session, other_user):
    theirs = ChatSessionFactory(owner=other_user)
    body = {"user_input": "Hello", "response": "Hi"}
    mine = post(api_client, episodes_url(session), body, key="shared-name")
    their = post(other_client, episodes_url(theirs), body, key="shared-name")
    assert mine.status_code == their.status_code == 201
    assert their.json()["id"] != mine.json()["id"]
    assert "Idempotent-Replayed" not in their


def test_another_users_key_never_replays_their_answer(api_client, other_client, session):
    body = {"user_input": "Secret", "response": "Kept"}
    post(api_client, episodes_url(session), body, key="k1")
    # The same request by someone who may not write there: their own 404, not the owner's answer.
    response = post(other_client, episodes_url(session), body, key="k1")
    assert response.status_code == 404
    assert "Secret" not in response.content.decode()


@pytest.mark.parametrize("key", ["", " spaced key", "x" * 256, "ünï"])
def test_malformed_key_is_a_400_naming_the_header(api_client, session, key):
    response = post(api_client, episodes_url(session), {"user_input": "a", "response": "b"}, key=key)
    assert response.status_code == 400
    assert "Idempotency-Key" in response.json()
    assert not Episode.objects.exists()


def test_a_failed_write_keeps_no_key(api_client, session):
    bad = post(api_client, episodes_url(session), {"user_input": "", "response": "b"}, key="retry-me")
    assert bad.status_code == 400
    good = post(api_client, episodes_url(session), {"user_input": "", "response": "b"}, key="retry-me")
    assert good.status_code == 400  # answered again, not replayed
    assert not IdempotencyKey.objects.exists()


def test_an_expired_key_is_a_new_write(api_client, session, settings):
    body = {"user_input": "Hello", "response": "Hi"}
    post(api_client, episodes_url(session), body, key="old")
    IdempotencyKey.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    again = post(api_client, episodes_url(session), body, key="old")
    assert again.status_code == 201 and "Idempotent-Replayed" not in again
    assert Episode.objects.filter(session=session).count() == 2


def test_keys_live_for_the_ttl_and_are_purged_after(api_client, session, settings):
    settings.IDEMPOTENCY_KEY_TTL_SECONDS = 3600
    post(api_client, episodes_url(session), {"user_input": "Hello", "response": "Hi"}, key="ttl")
    row = IdempotencyKey.objects.get()
    assert timedelta(minutes=59) < row.expires_at - row.created_at <= timedelta(hours=1)
    assert idempotency_keys_purge() == 0
    IdempotencyKey.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert idempotency_keys_purge() == 1
    assert not IdempotencyKey.objects.exists()


def test_deleting_the_session_or_erasing_the_user_drops_the_kept_answers(api_client, session, owner):
    post(api_client, episodes_url(session), {"user_input": "Private", "response": "Words"}, key="a")
    other = ChatSessionFactory(owner=owner)
    post(api_client, episodes_url(other), {"user_input": "More", "response": "Words"}, key="b")
    api_client.delete(f"/api/sessions/{session.uuid}/")
    assert list(IdempotencyKey.objects.values_list("key", flat=True)) == ["b"]
    user_memory_erase(user=owner)
    assert not IdempotencyKey.objects.exists()


def test_a_key_still_being_answered_is_a_409_with_retry_after(api_client, session, owner):
    body = {"message": "Hello"}
    raw = json.dumps(body, separators=(",", ":")).encode()
    # A first request with this key is in flight (its claim is committed, its model call running).
    key_claim(
        user=owner,
        key="busy",
        fingerprint=request_fingerprint("POST", chat_url(session), raw),
        lease_seconds=chat_lease_seconds(),
    )
    response = api_client.post(
        chat_url(session), raw, content_type="application/json", HTTP_IDEMPOTENCY_KEY="busy"
    )
    assert response.status_code == 409
    assert int(response["Retry-After"]) >= 1
    assert "still being answered" in response.json()["detail"]
    assert not Episode.objects.filter(session=session).exists()


def test_a_claim_whose_lease_ran_out_is_taken_over(api_client, session, owner, model):
    raw = json.dumps({"message": "Hello"}, separators=(",", ":")).encode()
    key_claim(
        user=owner,
        key="stale",
        fingerprint=request_fingerprint("POST", chat_url(session), raw),
        lease_seconds=60,
    )
    IdempotencyKey.objects.update(locked_until=timezone.now() - timedelta(seconds=1))
    response = api_client.post(
        chat_url(session), raw, content_type="application/json", HTTP_IDEMPOTENCY_KEY="stale"
    )
    assert response.status_code == 201
    assert Episode.objects.filter(session=session).count() == 1


# --- chat turns ----------------------------------------------------------------------


def test_chat_retry_with_the_same_key_makes_one_model_call_and_one_episode(api_client, session, model):
    first = post(api_client, chat_url(session), {"message": "Tell me more"}, key="turn-1")
    again = post(api_client, chat_url(session), {"message": "Tell me more"}, key="turn-1")
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert model_calls(model) == 1
    assert Episode.objects.filter(session=session).count() == 1


def test_streamed_chat_retry_replays_the_same_events(api_client, session, model):
    first = post(api_client, chat_url(session), {"message": "Stream it"}, key="s-1", HTTP_ACCEPT=SSE)
    body = b"".join(first.streaming_content)
    again = post(api_client, chat_url(session), {"message": "Stream it"}, key="s-1", HTTP_ACCEPT=SSE)
    assert again.status_code == 200 and again["Content-Type"].startswith(SSE)
    assert again.content == body
    assert b'"done":true' in body
    assert model_calls(model) == 1
    assert Episode.objects.filter(session=session).count() == 1


def test_a_failed_turn_frees_its_key_for_the_retry(api_client, session, model):
    model.set_mode("ok", fail_next=1, fail_mode="http_500")
    failed = post(api_client, chat_url(session), {"message": "Again?"}, key="t")
    assert failed.status_code == 503
    retried = post(api_client, chat_url(session), {"message": "Again?"}, key="t")
    assert retried.status_code == 201 and "Idempotent-Replayed" not in retried
    assert Episode.objects.filter(session=session).count() == 1


@pytest.mark.django_db(transaction=True)  # closing the response ends the request, as a server would
def test_an_abandoned_stream_frees_its_key(api_client, session, model):
    response = post(api_client, chat_url(session), {"message": "Leave early"}, key="gone", HTTP_ACCEPT=SSE)
    next(iter(response.streaming_content))
    response.close()  # the client went away mid-stream
    assert not IdempotencyKey.objects.exists()
    assert not Episode.objects.filter(session=session).exists()


# --- concurrent duplicates (PostgreSQL: a real server decides who waits) ------------------


@pytest.mark.django_db(transaction=True)
def test_concurrent_duplicates_make_one_episode():
    if connection.vendor != "postgresql":
        pytest.skip("concurrent writers need a database server (SQLite serializes the whole file)")
    owner = UserFactory(username="racer")
    session = ChatSessionFactory(owner=owner)
    token = Token.objects.create(user=owner).key
    start = threading.Barrier(6)
    answers: list[tuple[int, dict | list]] = []

    def send() -> None:
        client = Client(HTTP_AUTHORIZATION=f"Token {token}")
        start.wait()
        try:
            response = client.post(
                episodes_url(session),
                {"user_input": "Once", "response": "Only once"},
                content_type="application/json",
                HTTP_IDEMPOTENCY_KEY="race",
            )
            answers.append((response.status_code, response.json()))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=send) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert Episode.objects.filter(session=session).count() == 1
    stored = Episode.objects.get(session=session).pk
    assert all(code in (201, 409) for code, _ in answers)
    assert all(body["id"] == stored for code, body in answers if code == 201)


def test_same_key_asking_for_a_stream_instead_of_json_is_a_422(api_client, session, model):
    post(api_client, chat_url(session), {"message": "Once"}, key="form")
    streamed = post(api_client, chat_url(session), {"message": "Once"}, key="form", HTTP_ACCEPT=SSE)
    assert streamed.status_code == 422
    assert model_calls(model) == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_duplicate_chat_turns_make_one_model_call_and_one_episode(model):
    if connection.vendor != "postgresql":
        pytest.skip("concurrent writers need a database server (SQLite serializes the whole file)")
    model.set_mode("ok", latency=1.0)  # the first turn is still with the model when the others come
    owner = UserFactory(username="racer")
    session = ChatSessionFactory(owner=owner)
    token = Token.objects.create(user=owner).key
    start = threading.Barrier(4)
    codes: list[int] = []

    def send() -> None:
        client = Client(HTTP_AUTHORIZATION=f"Token {token}")
        start.wait()
        try:
            response = client.post(
                chat_url(session),
                {"message": "Once"},
                content_type="application/json",
                HTTP_IDEMPOTENCY_KEY="t",
            )
            codes.append(response.status_code)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=send) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(codes) == [201, 409, 409, 409]
    assert model_calls(model) == 1
    assert Episode.objects.filter(session=session).count() == 1
