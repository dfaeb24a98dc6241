"""Real PostgreSQL connections cut under writes (``pg_terminate_backend``)
and a server that is not there at all: every answer is a 201 or a JSON 503
with ``Retry-After``, never HTML, and every acknowledged write is stored.

PostgreSQL only: SQLite has no server to lose (``test_failures.py`` covers
the answers on both databases).
"""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, connections
from django.test import Client
from rest_framework.authtoken.models import Token

from sessions_app.models import Episode
from tests.factories import ChatSessionFactory, UserFactory
from tests.process_support import free_port, require_or_skip

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]

WRITERS = 4


@pytest.fixture
def postgresql() -> None:
    if connection.vendor != "postgresql":
        require_or_skip("the database is not PostgreSQL")


def write_loop(token: str, session_uuid: str, stop: threading.Event, out: list) -> None:
    client = Client(raise_request_exception=False, HTTP_AUTHORIZATION=f"Token {token}")
    n = 0
    try:
        while not stop.is_set():
            marker = f"{threading.get_ident()}-{n}"
            n += 1
            response = client.post(
                f"/api/sessions/{session_uuid}/episodes/",
                {"user_input": marker, "response": "ok"},
                content_type="application/json",
            )
            out.append((marker, response.status_code, response["Content-Type"], response.get("Retry-After")))
    finally:
        connections.close_all()


def test_writes_survive_terminated_backends(postgresql):
    owner = UserFactory(username="writer")
    session = ChatSessionFactory(owner=owner)
    token = Token.objects.create(user=owner).key
    stop = threading.Event()
    results: list[list] = [[] for _ in range(WRITERS)]
    threads = [
        threading.Thread(target=write_loop, args=(token, str(session.uuid), stop, results[i]))
        for i in range(WRITERS)
    ]
    for thread in threads:
        thread.start()
    try:
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:
            time.sleep(0.15)
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
        # A pooled process (nexus.database_settings) still holds the connections
        # terminated above, idle, each to fail one request: start the next test afresh.
        connection.close()
        connection.close_pool()
    answers = [row for rows in results for row in rows]
    statuses = {status for _, status, _, _ in answers}
    assert statuses <= {201, 503}, statuses
    assert all("json" in ctype for _, _, ctype, _ in answers)
    assert all(int(retry) > 0 for _, status, _, retry in answers if status == 503)
    acknowledged = {marker for marker, status, _, _ in answers if status == 201}
    stored = set(Episode.objects.filter(session=session).values_list("user_input", flat=True))
    assert acknowledged and acknowledged <= stored
    assert 503 in statuses, "no write met a cut connection; the test proved nothing"


def test_a_server_that_is_not_there_answers_503(postgresql):
    owner = UserFactory(username="writer")
    session = ChatSessionFactory(owner=owner)
    token = Token.objects.create(user=owner).key
    client = Client(raise_request_exception=False, HTTP_AUTHORIZATION=f"Token {token}")
    saved = dict(connection.settings_dict)
    connection.close()
    # A pooled process (nexus.database_settings) makes its connections in its pool:
    # a new pool for the new address, told to give up within a second.
    connection.close_pool()
    pool = connection.settings_dict["OPTIONS"].get("pool")
    if pool:
        connection.settings_dict["OPTIONS"] = {**saved["OPTIONS"], "pool": {**pool, "timeout": 1}}
    connection.settings_dict["PORT"] = str(free_port())  # nothing listens there
    try:
        response = client.post(
            f"/api/sessions/{session.uuid}/episodes/",
            {"user_input": "lost", "response": "no"},
            content_type="application/json",
        )
        v1 = client.get("/v1/models", HTTP_AUTHORIZATION=f"Bearer {token}")
    finally:
        connection.close()
        connection.close_pool()
        connection.settings_dict.update(saved)
    assert response.status_code == 503 and "json" in response["Content-Type"]
    assert int(response["Retry-After"]) > 0
    assert v1.status_code == 503 and v1.json()["error"]["code"] == "database_unavailable"
    assert not Episode.objects.filter(session=session).exists()
