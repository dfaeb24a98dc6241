"""A token revoked in one process fails at once in every other, on the Redis
cache, and a remembered token costs no round trip to the cache (nexus.marks)."""

from __future__ import annotations

import time

import pytest
import redis
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from nexus import marks
from nexus.api.authentication import generation_key
from nexus.counters import store_client
from tests.shared_store.conftest import run_in_other_process

pytestmark = pytest.mark.django_db


def remembered_token_client(owner) -> tuple[APIClient, Token]:
    token = Token.objects.create(user=owner)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert client.get("/api/sessions/").status_code == 200
    return client, token


def watching() -> marks.MarkWatch:
    """This process's watch, once it holds its subscription."""
    watch = marks.watch_for(store_client())
    deadline = time.monotonic() + 10
    while not watch.trusted():
        assert time.monotonic() < deadline, "the mark watch never subscribed"
        time.sleep(0.02)
    return watch


def redis_commands(monkeypatch) -> list[str]:
    sent: list[str] = []
    real = redis.Redis.execute_command
    monkeypatch.setattr(
        redis.Redis, "execute_command", lambda self, *a, **k: sent.append(str(a[0])) or real(self, *a, **k)
    )
    return sent


def test_a_token_revoked_in_another_process_fails_here_at_once(shared_cache, owner, session):
    client, token = remembered_token_client(owner)
    watching()
    assert client.get("/api/sessions/").status_code == 200  # remembered, checked against the mirror
    # The other process deletes the token (here: the row, with no signal in this
    # process) and gives the user a new generation, as its revocation does once
    # committed; that returns once every process has acknowledged it.
    Token.objects.filter(pk=token.pk)._raw_delete(Token.objects.db)
    took = run_in_other_process(
        shared_cache,
        "import time; from nexus.api.authentication import generation_key; from nexus.marks import set_mark; "
        f"start = time.monotonic(); set_mark(generation_key({owner.pk}), 'revoked', 60); "
        "print(time.monotonic() - start)",
    )
    assert client.get("/api/sessions/").status_code == 401
    # Acknowledged by this process's listener, not waited out.
    assert float(took) < marks.LEASE_SECONDS


def test_a_remembered_token_costs_no_round_trip_to_the_cache(shared_cache, owner, session, monkeypatch):
    client, _ = remembered_token_client(owner)
    watching()
    client.get("/api/sessions/")  # reads the mark once, then the mirror holds it
    sent = redis_commands(monkeypatch)
    assert client.get("/api/sessions/").status_code == 200
    assert "GET" not in sent


def test_while_the_watch_is_not_trusted_every_request_reads_the_mark(
    shared_cache, owner, session, monkeypatch
):
    client, token = remembered_token_client(owner)
    watching()
    # A listener that has not heard from the cache for a lease: the mirror may be behind.
    monkeypatch.setattr(marks, "LEASE_SECONDS", 0.0)
    sent = redis_commands(monkeypatch)
    assert client.get("/api/sessions/").status_code == 200
    assert sent.count("GET") == 1
    # A change the mirror never heard of is still seen.
    Token.objects.filter(pk=token.pk)._raw_delete(Token.objects.db)
    store_client().set(f"nexus-cache:1:{generation_key(owner.pk)}", b"changed elsewhere")
    assert client.get("/api/sessions/").status_code == 401


def test_a_mark_change_reaches_another_process_through_its_mirror(shared_cache):
    watch = watching()
    assert marks.current_mark("some-mark") is None
    run_in_other_process(shared_cache, "from nexus.marks import set_mark; set_mark('some-mark', 'v2', 60)")
    # Pushed into the mirror before the other process returned.
    assert watch.mirrored("nexus-cache:1:some-mark") == b"v2"
    assert marks.current_mark("some-mark") == b"v2"
