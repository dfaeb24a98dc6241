"""A Redis outage is not an outage of the API.

gunicorn serves the project with a redis-server of the test's own as broker
and shared store (database: SQLite). Clients log in, list, write episodes,
chat through ``/v1`` and revoke their tokens, without pause, while Redis is
stopped and started again: no request answers 5xx, and each of them keeps
doing its job (a revoked token is refused at once, Redis or not).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter, defaultdict

import httpx
import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from nexus import store_guard
from tests.clock import start_early_in_a_minute
from tests.factories import EpisodeFactory, SummaryFactory
from tests.integration_support import use_broker
from tests.process_support import gunicorn_server, own_redis  # noqa: F401 - own_redis: fixture
from tests.shared_store.servers import PASSWORD, prepare, server_env

CLIENTS = 4


def one_round(http: httpx.Client, base: str, username: str, session_id: str) -> list[tuple[str, int]]:
    """Log in, use the token everywhere, revoke it, use it once more."""
    seen: list[tuple[str, int]] = []
    login = http.post(f"{base}/api/auth/token/", json={"username": username, "password": PASSWORD})
    seen.append(("login", login.status_code))
    if login.status_code != 200:
        return seen
    auth = {"Authorization": f"Token {login.json()['token']}"}
    seen.append(("list", http.get(f"{base}/api/sessions/", headers=auth).status_code))
    write = http.post(
        f"{base}/api/sessions/{session_id}/episodes/",
        json={"user_input": "What is on the list?", "response": "Milk and bread."},
        headers=auth,
    )
    seen.append(("write", write.status_code))
    chat = http.post(
        f"{base}/v1/chat/completions",
        json={"model": "nexus-test-chat", "messages": [{"role": "user", "content": "And what else?"}]},
        headers={
            "Authorization": auth["Authorization"].replace("Token", "Bearer"),
            "X-Nexus-Session": session_id,
        },
    )
    seen.append(("v1", chat.status_code))
    seen.append(("revoke", http.delete(f"{base}/api/auth/token/", headers=auth).status_code))
    seen.append(("revoked", http.get(f"{base}/api/sessions/", headers=auth).status_code))
    return seen


EXPECTED = {"login": 200, "list": 200, "write": 201, "v1": 200, "revoke": 204, "revoked": 401}


def test_logins_writes_v1_and_revocation_keep_working_while_redis_is_down(own_redis, tmp_path):  # noqa: F811
    env = server_env(
        tmp_path,
        CELERY_BROKER_URL=own_redis.url,
        API_THROTTLE_ANON="100000/minute",
        LOGIN_FAILURE_LIMIT="",
        LOGIN_FAILURE_ADDRESS_LIMIT="",
        CHAT_MODEL="nexus-test-chat",
    )
    sessions = prepare(
        env,
        "from sessions_app.services import session_create\n"
        f"users = [ann] + [get_user_model().objects.create_user(f'ann{{i}}', password={PASSWORD!r})"
        f" for i in range(1, {CLIENTS})]\n"
        "print(' '.join(str(session_create(owner=u, title='Shopping').uuid) for u in users))\n",
    ).split()
    names = ["ann"] + [f"ann{i}" for i in range(1, CLIENTS)]
    phase = ["before"]
    results: dict[str, list[tuple[str, int]]] = defaultdict(list)
    errors: list[BaseException] = []
    stop = threading.Event()

    def client(username: str, session_id: str) -> None:
        with httpx.Client(timeout=20) as http:
            while not stop.is_set():
                where = phase[0]
                try:
                    results[where].extend(one_round(http, base, username, session_id))
                except httpx.HTTPError as exc:
                    errors.append(exc)
                    return

    with gunicorn_server(env, tmp_path / "web.log", workers=2) as base:
        threads = [threading.Thread(target=client, args=pair) for pair in zip(names, sessions, strict=True)]
        for thread in threads:
            thread.start()
        try:
            time.sleep(3)
            phase[0] = "outage"
            own_redis.stop()
            time.sleep(6)
            phase[0] = "after"
            own_redis.start()
            time.sleep(4)
        finally:
            stop.set()
            for thread in threads:
                thread.join(timeout=60)
        log = (tmp_path / "web.log").read_text(errors="replace")

    assert not errors, errors
    for where in ("before", "outage", "after"):
        by_kind = Counter(results[where])
        failed = {pair: n for pair, n in by_kind.items() if pair[1] >= 500}
        assert not failed, f"{where}: {failed}\n{log[-4000:]}"
        wrong = {pair: n for pair, n in by_kind.items() if EXPECTED[pair[0]] != pair[1]}
        assert not wrong, f"{where}: {wrong}\n{log[-4000:]}"
        assert {kind for kind, _ in by_kind} == set(EXPECTED), f"{where}: {by_kind}"
    # The outage was noticed and said so, once per process, not once per request.
    assert 1 <= log.count("shared store unreachable") <= 2 * 3, log[-4000:]


# --- in this process: each use, one at a time ---------------------------------------


@pytest.fixture
def redis_cache(own_redis, settings):  # noqa: F811
    """This process's cache on the test's own redis-server (stop it to see an outage)."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": own_redis.url,
            "KEY_PREFIX": "nexus-cache",
            "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 2},
        }
    }
    yield own_redis


def token_client(user) -> tuple[APIClient, Token]:
    token = Token.objects.create(user=user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client, token


@pytest.mark.django_db
def test_throttles_fail_open_with_one_warning(redis_cache, settings, caplog, anon_client):
    settings.API_THROTTLE_ANON = "2/minute"
    start_early_in_a_minute()
    assert [anon_client.post("/api/auth/token/", {}, format="json").status_code for _ in range(3)] == [
        400,
        400,
        429,
    ]
    redis_cache.stop()
    with caplog.at_level(logging.WARNING, logger="nexus.store"):
        answers = [anon_client.post("/api/auth/token/", {}, format="json").status_code for _ in range(5)]
    assert answers == [400] * 5
    warnings = [r for r in caplog.records if r.name == "nexus.store"]
    assert len(warnings) == 1 and "throttles" in warnings[0].getMessage()


@pytest.mark.django_db
def test_a_remembered_token_is_checked_against_the_database_while_redis_is_down(redis_cache, owner, session):
    client, token = token_client(owner)
    assert client.get("/api/sessions/").status_code == 200  # remembered
    redis_cache.stop()
    assert client.get("/api/sessions/").status_code == 200
    # Deleted with no word to the store (it is down): refused at once all the same.
    Token.objects.filter(pk=token.pk)._raw_delete(Token.objects.db)
    assert client.get("/api/sessions/").status_code == 401


@pytest.mark.django_db
def test_revoking_while_redis_is_down_answers_204_and_the_token_fails(redis_cache, owner, session):
    client, _ = token_client(owner)
    assert client.get("/api/sessions/").status_code == 200
    redis_cache.stop()
    assert client.delete("/api/auth/token/").status_code == 204
    assert client.get("/api/sessions/").status_code == 401


@pytest.mark.django_db
def test_what_was_remembered_before_an_outage_is_not_trusted_after_it(
    redis_cache, owner, other_user, session
):
    client, token = token_client(owner)
    assert client.get("/api/sessions/").status_code == 200  # remembered
    redis_cache.stop()
    # Revoked while the store was away: its new generation never reached it.
    Token.objects.filter(pk=token.pk)._raw_delete(Token.objects.db)
    other, _ = token_client(other_user)
    assert other.get("/api/sessions/").status_code == 200  # this process notices the outage
    redis_cache.start()
    store_guard.reset()  # past the pause after a failure
    # The store answers with the generation the entry was read with; the entry is not trusted.
    assert client.get("/api/sessions/").status_code == 401


@pytest.mark.django_db
def test_logins_are_not_limited_while_redis_is_down(redis_cache, settings, owner, anon_client):
    settings.LOGIN_FAILURE_LIMIT = (1, 60)
    owner.set_password("right-password")
    owner.save()
    redis_cache.stop()
    wrong = [
        anon_client.post(
            "/api/auth/token/", {"username": "owner", "password": "wrong"}, format="json"
        ).status_code
        for _ in range(3)
    ]
    assert wrong == [400, 400, 400]
    right = anon_client.post(
        "/api/auth/token/", {"username": "owner", "password": "right-password"}, format="json"
    )
    assert right.status_code == 200


@pytest.fixture
def summary_row(session):
    first = EpisodeFactory(session=session)
    last = EpisodeFactory(session=session)
    return SummaryFactory(session=session, first_episode_id=first.pk, last_episode_id=last.pk)


@pytest.fixture
def real_broker(own_redis):  # noqa: F811
    """Tasks go to the test's own redis-server (nobody consumes them). Only
    Celery's app is changed (``use_broker``): Django's settings stay as they
    are, or the app could read its configuration from them meanwhile and
    keep it for the rest of the session."""
    with use_broker(own_redis.url, "nexus-outage-test"):
        yield own_redis


@pytest.mark.django_db(transaction=True)  # sent at once, as in a request (no test transaction)
def test_a_regeneration_that_cannot_be_queued_answers_503(redis_cache, real_broker, api_client, summary_row):
    url = f"/api/summaries/{summary_row.pk}/regenerate/"
    redis_cache.stop()
    answer = api_client.post(url)
    assert answer.status_code == 503
    assert int(answer["Retry-After"]) > 0
    assert "nothing was queued" in answer.json()["detail"]
    redis_cache.start()
    store_guard.reset()
    assert api_client.post(url).status_code == 202


@pytest.mark.django_db(transaction=True)
def test_a_regeneration_the_broker_refuses_answers_503_and_leaves_the_row_free(
    real_broker, api_client, summary_row
):
    url = f"/api/summaries/{summary_row.pk}/regenerate/"
    real_broker.stop()  # the broker only: the cache is this process's memory
    answer = api_client.post(url)
    assert answer.status_code == 503
    assert "Retry-After" in answer
    real_broker.start()
    # The row was not left marked as queued: the next request queues it.
    assert api_client.post(url).status_code == 202
