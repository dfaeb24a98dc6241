"""What the servers themselves write, on the embedded default (SQLite, no
broker) as ``bin/run`` serves it (runserver, debug) and under gunicorn:

- gunicorn's own answer to a request line over its limit is JSON (a long
  search goes in a POST body instead, and that works through gunicorn);
- a path holding ``%0a`` cannot forge a log line, in gunicorn's access log
  nor in the application's plain log;
- a search query and a context question are not logged unless LOG_CONTENT=1.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.embedded_servers import PASSWORD, SERVERS, embedded_env, embedded_server

SECRET_QUERY = "zanzibarwalrus"
SECRET_QUESTION = "quokkaumbrella"
FORGED = 'FORGED 127.0.0.1 "GET /admin/ HTTP/1.1" 200'


class Server:
    def __init__(self, base: str, log: Path) -> None:
        self.base, self.log = base, log

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def client(self) -> httpx.Client:
        token = httpx.post(
            f"{self.base}/api/auth/token/", json={"username": "demo", "password": PASSWORD}, timeout=30
        ).json()["token"]
        return httpx.Client(base_url=self.base, timeout=30, headers={"Authorization": f"Token {token}"})


@pytest.fixture(scope="module", params=SERVERS)
def server(request, tmp_path_factory) -> Iterator[Server]:
    tmp_path = tmp_path_factory.mktemp(request.param)
    log = tmp_path / "server.log"
    with embedded_server(request.param, embedded_env(tmp_path), log) as base:
        server = Server(base, log)
        server.kind = request.param
        yield server


def test_a_path_with_an_encoded_newline_forges_no_log_line(server):
    with server.client() as client:
        for prefix in ("/api/", "/"):
            client.get(f"{prefix}nothing%0a{FORGED.replace(' ', '%20')}")
        client.get("/healthz")  # something after, so the lines above are written out
    text = server.log_text()
    assert "FORGED" in text  # it was logged ...
    assert not any(line.startswith("FORGED") for line in text.splitlines()), text  # ... never as a line of its own


def test_a_search_query_and_a_context_question_are_not_logged(server):
    with server.client() as client:
        uuid = client.post("/api/sessions/", json={"title": "Log"}).json()["id"]
        client.post(f"/api/sessions/{uuid}/episodes/", json={"user_input": "hello", "response": "hi"})
        assert client.get("/api/search/", params={"q": SECRET_QUERY}).status_code == 200
        assert client.get(f"/api/sessions/{uuid}/search/", params={"q": SECRET_QUERY}).status_code == 200
        assert client.get(f"/api/sessions/{uuid}/context/", params={"question": SECRET_QUESTION}).status_code == 200
        client.get("/healthz")
    text = server.log_text()
    assert "/api/search/" in text  # the requests are logged ...
    assert SECRET_QUERY not in text and SECRET_QUESTION not in text  # ... without what was asked


def test_a_request_line_over_the_limit_is_a_json_414_and_the_long_search_posts(server):
    if server.kind != "gunicorn":
        pytest.skip("the request-line limit is gunicorn's")
    q = ("погода " * 200)[:1000]
    with server.client() as client:
        too_long = client.get("/api/search/", params={"q": q})
        assert too_long.status_code == 414
        assert too_long.headers["content-type"] == "application/json"
        body = too_long.json()
        assert "POST /api/search/" in body["detail"] and body["error"]["code"] == "uri_too_long"
        posted = client.post("/api/search/", json={"q": q})
        assert posted.status_code == 200, posted.text
