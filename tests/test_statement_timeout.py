"""Every statement a web request runs is bounded (``DATABASE_STATEMENT_TIMEOUT_MS``,
``nexus.statement_timeout``), and a statement over the bound answers 503 "the
query took too long" with ``Retry-After`` in each surface's shape
(``nexus.failures``); work outside requests keeps the server's setting."""

from __future__ import annotations

import json
import threading
import time

import psycopg
import pytest
from django.db import OperationalError, connection, transaction
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext

from nexus.database_settings import reset_connection
from nexus.failures import (
    DATABASE_UNAVAILABLE,
    QUERY_RETRY_AFTER_SECONDS,
    QUERY_TOO_LONG,
    TOO_LONG,
    UNAVAILABLE,
    database_failure,
    failure_response,
)
from tests.factories import EpisodeFactory

LOCKED_TABLE = "sessions_app_episode"
LOCK_SECONDS = 5


@pytest.fixture
def postgres():
    if connection.vendor != "postgresql":
        pytest.skip("statement_timeout is PostgreSQL's")


def statement_timeout(conn=connection) -> str:
    with conn.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        return cursor.fetchone()[0]


def canceled_statement() -> OperationalError:
    """What Django raises for a statement the server cancelled at its timeout."""
    with pytest.raises(OperationalError) as caught, transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL statement_timeout = 50")
        cursor.execute("SELECT pg_sleep(2)")
    return caught.value


@pytest.fixture
def bounded_connection(settings, postgres):
    """A short limit, and after the test a fresh connection (this one keeps the limit it was
    given); for transactional tests only: the others' connection may not be closed."""
    settings.DATABASE_STATEMENT_TIMEOUT_MS = 300
    yield
    connection.close()


@pytest.fixture
def episodes_locked():
    """Another connection holds the episode table for a few seconds, so a statement that reads it waits."""
    holder = psycopg.connect(**connection.get_connection_params(), autocommit=False)
    holder.execute(f"LOCK TABLE {LOCKED_TABLE} IN ACCESS EXCLUSIVE MODE")
    release = threading.Timer(LOCK_SECONDS, holder.rollback)  # an unbounded statement waits this long
    release.start()
    yield
    release.cancel()
    holder.rollback()
    holder.close()


@pytest.mark.django_db(transaction=True)
def test_a_search_over_the_limit_answers_503_the_query_took_too_long(
    api_client, session, bounded_connection, episodes_locked
):
    started = time.monotonic()
    response = api_client.get("/api/search/", {"q": "walrus"})
    assert response.status_code == 503
    assert time.monotonic() - started < LOCK_SECONDS
    assert response.json() == {"detail": QUERY_TOO_LONG}
    assert response["Retry-After"] == str(QUERY_RETRY_AFTER_SECONDS)


@pytest.mark.django_db(transaction=True)
def test_within_the_limit_the_same_search_answers(api_client, session, bounded_connection):
    EpisodeFactory(session=session, user_input="A walrus on the beach", response="Big one.")
    response = api_client.get("/api/search/", {"q": "walrus"})
    assert response.status_code == 200
    assert len(response.json()["results"]) == 1
    assert statement_timeout() == "300ms"


@pytest.mark.django_db(transaction=True)
def test_a_connection_the_request_opens_is_bounded_too(api_client, session, bounded_connection):
    connection.close()  # as a pooled connection is at the start of every request
    assert api_client.get("/api/sessions/").status_code == 200
    assert statement_timeout() == "300ms"


@pytest.mark.django_db
def test_a_cancelled_statement_is_told_apart_from_an_unreachable_database(postgres):
    canceled = canceled_statement()
    assert database_failure(canceled) is TOO_LONG
    assert database_failure(OperationalError("server closed the connection unexpectedly")) is UNAVAILABLE
    assert database_failure(ValueError()) is None

    factory = RequestFactory()
    api = failure_response(factory.get("/api/search/"), canceled)
    assert (api.status_code, api["Retry-After"]) == (503, str(QUERY_RETRY_AFTER_SECONDS))
    assert json.loads(api.content) == {"detail": QUERY_TOO_LONG}
    openai = failure_response(factory.post("/v1/chat/completions"), canceled)
    assert (openai.status_code, openai["Retry-After"]) == (503, str(QUERY_RETRY_AFTER_SECONDS))
    error = json.loads(openai.content)["error"]
    assert (error["code"], error["message"]) == ("query_timeout", QUERY_TOO_LONG)
    unreachable = failure_response(factory.get("/api/search/"), OperationalError("gone"))
    assert json.loads(unreachable.content) == {"detail": DATABASE_UNAVAILABLE}


@pytest.mark.django_db(transaction=True)
def test_a_connection_is_given_the_limit_once_not_per_request(api_client, bounded_connection, settings):
    settings.DATABASE_STATEMENT_TIMEOUT_MS = 4321  # a value no earlier request gave this connection
    sent = []
    for _ in range(2):
        with CaptureQueriesContext(connection) as ctx:
            assert api_client.get("/api/sessions/").status_code == 200
        sent.append([q["sql"] for q in ctx.captured_queries if "statement_timeout" in q["sql"]])
    assert [len(each) for each in sent] == [1, 0]
    assert statement_timeout() == "4321ms"


@pytest.mark.django_db(transaction=True)
def test_work_outside_a_request_keeps_the_servers_setting(api_client, session, bounded_connection):
    assert api_client.get("/api/sessions/").status_code == 200
    assert statement_timeout() == "300ms"
    # A thread of its own (as the embedded worker, or a task) opens its connection outside any request.
    seen: list[str] = []

    def worker() -> None:
        from django.db import connection as own

        try:
            seen.append(statement_timeout(own))
        finally:
            own.connection.close()  # closed for good, not kept by the pool past the test database
            own.close()

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    with psycopg.connect(**connection.get_connection_params()) as fresh:
        server_default = fresh.execute("SHOW statement_timeout").fetchone()[0]
    assert seen == [server_default]


@pytest.mark.django_db
def test_a_connection_back_in_the_pool_loses_the_requests_limit(postgres):
    with psycopg.connect(**connection.get_connection_params(), autocommit=True) as conn:
        default = conn.execute("SHOW statement_timeout").fetchone()[0]
        conn.execute("SET statement_timeout = 1234")
        reset_connection(conn)
        assert conn.execute("SHOW statement_timeout").fetchone()[0] == default
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
