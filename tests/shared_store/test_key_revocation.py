"""An API key revoked through one web server is refused by another at once,
on Redis and on the database store: two gunicorn processes on one database,
each remembering the key it has seen."""

from __future__ import annotations

import httpx
import pytest
import redis

from tests.integration_support import redis_url  # noqa: F401 - fixture
from tests.process_support import gunicorn_server
from tests.shared_store.servers import prepare, server_env, token_for


@pytest.fixture(params=["database", "redis"])
def two_servers(request, tmp_path):
    overrides = {"API_TOKEN_CACHE_SECONDS": "300"}
    if request.param == "redis":
        url = request.getfixturevalue("redis_url")
        redis.Redis.from_url(url).flushdb()
        overrides["CACHE_URL"] = url
    env = server_env(tmp_path, **overrides)
    prepare(env)
    with gunicorn_server(env, tmp_path / "a.log") as a, gunicorn_server(env, tmp_path / "b.log") as b:
        yield a, b
    if request.param == "redis":
        redis.Redis.from_url(overrides["CACHE_URL"]).flushdb()


def status(base: str, path: str, key: str) -> int:
    return httpx.get(f"{base}{path}", headers={"Authorization": f"Bearer {key}"}, timeout=10).status_code


def test_a_key_revoked_through_one_server_fails_in_both_at_once(two_servers):
    a, b = two_servers
    account = {"Authorization": f"Bearer {token_for(a)}"}
    created = httpx.post(f"{a}/api/keys/", json={"name": "two servers"}, headers=account, timeout=10)
    assert created.status_code == 201, created.text
    key, key_id = created.json()["key"], created.json()["id"]
    kept = httpx.post(f"{a}/api/keys/", json={"name": "kept"}, headers=account, timeout=10).json()["key"]
    uses = [
        status(server, path, k)
        for server in (a, b, b)
        for path in ("/api/sessions/", "/v1/models")
        for k in (key, kept)
    ]
    assert uses == [200] * 12  # both processes remember both keys
    revoked = httpx.delete(f"{b}/api/keys/{key_id}/", headers=account, timeout=10)
    assert revoked.status_code == 204
    assert [status(server, "/api/sessions/", key) for server in (a, b, a, b)] == [401] * 4
    assert [status(server, "/v1/models", key) for server in (a, b)] == [401] * 2
    assert [status(server, "/api/sessions/", kept) for server in (a, b)] == [200] * 2
