"""The shared store in the database (``CACHE_URL=db://``, the default without
Redis): counts in one upsert, windows that start again, login limits and
marks through it, and remembered tokens checked against a generation each
process reads at most once a second (``nexus.api.polled_generation``)."""

from __future__ import annotations

import threading
import time

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from nexus import counters
from nexus.api import polled_generation
from nexus.counters import count_in_window, current_counts, forget_count
from nexus.marks import current_mark, set_mark
from nexus.shared_store.models import Counter
from summaries import run_state


@pytest.fixture
def database_store(settings):
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.db.DatabaseCache",
            "LOCATION": "nexus_cache",
            "KEY_PREFIX": "nexus-cache",
        }
    }
    assert counters.store_is_database()


@pytest.mark.django_db
def test_a_count_is_one_statement_that_returns_the_new_value(database_store, django_assert_num_queries):
    with django_assert_num_queries(1):
        assert count_in_window("hits", 60) == 1
    assert [count_in_window("hits", 60) for _ in range(3)] == [2, 3, 4]
    assert count_in_window("hits", 60, batch=10) == 5  # takes 5..14 at once
    assert Counter.objects.get(name="hits").value == 14


@pytest.mark.django_db
def test_a_window_that_is_over_starts_again(database_store, monkeypatch):
    assert count_in_window("window", 10) == 1
    assert count_in_window("window", 10) == 2
    later = counters.time.time() + 11
    monkeypatch.setattr(counters.time, "time", lambda: later)
    assert current_counts(["window"]) == {}
    assert count_in_window("window", 10) == 1


@pytest.mark.django_db
def test_counts_are_read_and_forgotten(database_store):
    count_in_window("a", 60)
    count_in_window("a", 60)
    count_in_window("b", 60)
    assert current_counts(["a", "b", "c"]) == {"a": 2, "b": 1}
    forget_count("a")
    assert current_counts(["a", "b"]) == {"b": 1}


@pytest.mark.django_db
def test_expired_counts_are_purged_now_and_then(database_store, monkeypatch):
    Counter.objects.create(name="old", value=3, expires_at=1)
    monkeypatch.setattr(counters, "PURGE_EVERY", 1)
    count_in_window("new", 60)
    assert list(Counter.objects.values_list("name", flat=True)) == ["new"]


@pytest.mark.django_db(transaction=True)
def test_concurrent_counts_all_land(database_store):
    if connection.vendor != "postgresql":
        pytest.skip("threads share an in-memory SQLite database badly; the processes test covers SQLite")
    got: list[int] = []
    lock = threading.Lock()

    def count() -> None:
        try:
            for _ in range(25):
                value = count_in_window("race", 60)
                with lock:
                    got.append(value)
        finally:
            connection.close()

    threads = [threading.Thread(target=count) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(got) == list(range(1, 101))


@pytest.mark.django_db
def test_marks_and_regeneration_marks_live_in_the_cache_table(database_store):
    set_mark("some-mark", "v1", 60)
    assert current_mark("some-mark") == "v1"
    assert run_state.mark_regeneration(7) is True
    assert run_state.mark_regeneration(7) is False
    run_state.end_regeneration(7)
    assert run_state.mark_regeneration(7) is True
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM nexus_cache")
        assert cursor.fetchone()[0] == 2


@pytest.mark.django_db
def test_login_failures_are_counted_in_the_database(database_store, settings, owner, anon_client):
    settings.LOGIN_FAILURE_LIMIT = (2, 60)
    owner.set_password("right-password")
    owner.save()
    body = {"username": "owner", "password": "wrong"}
    answers = [anon_client.post("/api/auth/token/", body, format="json").status_code for _ in range(3)]
    assert answers == [400, 400, 429]
    assert Counter.objects.filter(name__startswith="login-failures:").count() == 2


def token_queries(client: APIClient) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/api/sessions/").status_code == 200
    return [q["sql"] for q in queries if "authtoken_token" in q["sql"] or "nexus_cache" in q["sql"]]


@pytest.mark.django_db
def test_a_remembered_token_costs_no_query_between_polls(database_store, owner, session):
    token = Token.objects.create(user=owner)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    first = token_queries(client)
    assert len(first) == 2  # the generation, then the token
    assert token_queries(client) == []


@pytest.mark.django_db
def test_a_revocation_elsewhere_is_seen_once_it_has_answered(database_store, owner, session):
    token = Token.objects.create(user=owner)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert client.get("/api/sessions/").status_code == 200  # remembered
    # Another process deletes the token and revokes: a new generation, then its wait.
    Token.objects.filter(pk=token.pk)._raw_delete(Token.objects.db)
    cache.set(polled_generation.KEY, "changed elsewhere", None)
    time.sleep(polled_generation.POLL_SECONDS + polled_generation.MARGIN_SECONDS)
    assert client.get("/api/sessions/").status_code == 401


@pytest.mark.django_db(transaction=True)
def test_revoking_here_waits_out_a_poll_before_it_answers(database_store, owner, session):
    token = Token.objects.create(user=owner)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert client.get("/api/sessions/").status_code == 200
    before = cache.get(polled_generation.KEY)
    started = time.monotonic()
    assert client.delete("/api/auth/token/").status_code == 204
    assert time.monotonic() - started >= polled_generation.POLL_SECONDS
    assert cache.get(polled_generation.KEY) != before
    assert client.get("/api/sessions/").status_code == 401
