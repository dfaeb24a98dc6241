"""What the servers themselves write, on the embedded default (SQLite, no
broker) as ``bin/run`` serves it (runserver, debug) and under gunicorn:

- gunicorn's own answer to a request line over its limit is JSON (a long
  search goes in a POST body instead, and that works through gunicorn);
- a path holding ``%0a`` cannot forge a log line, in gunicorn's access log
  nor in the application's plain log;
- a search query and a context question are not logged unless LOG_CONTENT=1.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.process_support import free_port, run_python, start_logged, stop_process, wait_until

VENV_BIN = Path(sys.executable).parent
PASSWORD = "nexus-demo"
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


def _env(tmp_path: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SUMMARY_", "DJANGO_", "CELERY_", "CONTEXT_", "INFERENCE_", "DATABASE_", "LOG_"))
    }
    env.update(DJANGO_DEBUG="1", DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}", NEXUS_ENV_FILE="")
    return env


@pytest.fixture(scope="module", params=["runserver", "gunicorn"])
def server(request, tmp_path_factory) -> Iterator[Server]:
    tmp_path = tmp_path_factory.mktemp(request.param)
    env = _env(tmp_path)
    for command in (("migrate", "--noinput"), ("ensure_demo_user",)):
        done = run_python("manage.py", *command, env=env)
        assert done.returncode == 0, done.stderr
    port = free_port()
    if request.param == "runserver":
        command = [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"]
    else:
        env.update(GUNICORN_BIND=f"127.0.0.1:{port}", WEB_CONCURRENCY="1", GUNICORN_THREADS="2")
        command = [str(VENV_BIN / "gunicorn"), "nexus.wsgi", "--config", "nexus/gunicorn.conf.py"]
    log = tmp_path / "server.log"
    process = start_logged(command, log_path=log, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(
            lambda: httpx.get(f"{base}/healthz", timeout=2).status_code == 200,
            timeout=60,
            message="the server to answer",
            retry_on=(httpx.HTTPError,),
        )
        server = Server(base, log)
        server.kind = request.param
        yield server
    finally:
        stop_process(process, group=True)


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
