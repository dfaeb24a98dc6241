"""How bench/memory_recall.py replays its conversations through the API.

On the embedded default as a user runs it (the ``offline`` backend, no
broker: summarization and encoding run in-process after each commit), one
``POST /api/sessions/{uuid}/episodes/`` per day the user chatted, through
the test client with token authentication. Each episode is sent with its
``created_at``; when the API does not take it, the episodes carry the replay
time instead and ``Replay.dated`` says so. A session's title is its
conversation's key and hash, so a complete earlier replay of the same
conversation is reused.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bench.recall_data import Conversation, Exchange, fingerprint

SQLITE_PATH = "/tmp/nexus_recall.sqlite3"
POSTGRES_URL = "postgres://postgres@127.0.0.1:5432/nexus_recall_bench"
USERNAME = "bench-recall"


def setup(database: str, sqlite_path: str = SQLITE_PATH) -> str:
    """Point Django at the benchmark database, migrate it; returns its URL.

    The embedded default as a user runs it: the offline backend and no broker,
    so summarization runs in-process after each commit.
    """
    os.environ.pop("CELERY_BROKER_URL", None)
    env = {
        "INFERENCE_BACKEND": "offline",
        "DJANGO_ALLOWED_HOSTS": "testserver",  # the test client's host
        "API_THROTTLE_USER": "100000000/minute",  # replay and questions far above the default rate
        "LOG_LEVEL": "WARNING",
    }
    if database == "postgres":
        os.environ.setdefault("BENCH_DATABASE_URL", POSTGRES_URL)
        from bench.support import setup_django

        return setup_django(**env)

    url = f"sqlite:///{sqlite_path}"
    os.environ.update(env, DATABASE_URL=url, DJANGO_SETTINGS_MODULE="nexus.settings")
    os.environ.setdefault("DJANGO_SECRET_KEY", "bench-only-secret-key")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    return url


class Api:
    """The REST API through the test client, authenticated as the benchmark's user (or ``username``)."""

    def __init__(self, username: str = USERNAME) -> None:
        from django.contrib.auth import get_user_model
        from rest_framework.authtoken.models import Token
        from rest_framework.test import APIClient

        user, _ = get_user_model().objects.get_or_create(username=username)
        token, _ = Token.objects.get_or_create(user=user)
        self.client = APIClient()
        self.client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")

    # secure=True throughout: production settings redirect plain HTTP to HTTPS.
    def get(self, path: str, params: dict[str, Any] | None = None) -> tuple[int, Any]:
        response = self.client.get(path, params or {}, secure=True)
        return response.status_code, response.json()

    def post(self, path: str, body: Any) -> tuple[int, Any]:
        response = self.client.post(path, body, format="json", secure=True)
        return response.status_code, response.json()

    def delete(self, path: str) -> None:
        self.client.delete(path, secure=True)


def expect(status: int, body: Any, wanted: int, what: str) -> Any:
    if status != wanted:
        raise SystemExit(f"{what} answered {status}: {str(body)[:300]}")
    return body


@dataclass
class Replay:
    dated: bool | None = None  # does the API keep created_at? None until the first post says
    requests: int = 0
    episodes: int = 0
    seconds: float = 0.0


def title_of(conversation: Conversation) -> str:
    """The key ("dialogue (friends), seed 7 #1 n=320") and the hash of the
    text: a replay is reused only while its conversation is made the same."""
    return f"memory recall bench, {conversation.key}, {fingerprint([conversation])}"


def episode_payload(exchange: Exchange, dated: bool) -> dict[str, str]:
    payload = {"user_input": exchange.user_input, "response": exchange.response}
    if dated:
        payload["created_at"] = exchange.created_at.isoformat()
    return payload


def kept_date(sent: Exchange, stored: dict[str, Any]) -> bool:
    """Whether the stored episode carries the exchange's own time, not the replay's."""
    return datetime.fromisoformat(stored["created_at"]) == sent.created_at


def post_session(api: Api, uuid: str, day: list[Exchange], replay: Replay) -> None:
    """One day's exchanges in one request, as a client syncing after a chat would."""
    path = f"/api/sessions/{uuid}/episodes/"
    dated = replay.dated is not False
    status, body = api.post(path, [episode_payload(e, dated) for e in day])
    replay.requests += 1
    if status == 400 and dated and "created_at" in str(body):
        replay.dated = False
        status, body = api.post(path, [episode_payload(e, False) for e in day])
        replay.requests += 1
    expect(status, body, 201, f"POST {path}")
    if replay.dated is None:
        # An API that does not know the field may ignore it and answer 201.
        replay.dated = kept_date(day[0], body[0])
    replay.episodes += len(day)


def find_session(api: Api, title: str, size: int) -> str | None:
    """The uuid of a complete earlier replay with this title; incomplete ones are deleted."""
    from django.db.models import Count

    from sessions_app.models import ChatSession

    found = None
    sessions = ChatSession.objects.filter(owner__username=USERNAME, title=title)
    for session in sessions.annotate(size=Count("episodes")):
        if session.size == size and found is None:
            found = str(session.uuid)
        else:
            api.delete(f"/api/sessions/{session.uuid}/")
    return found


def replayed_dated(api: Api, uuid: str, first: Exchange) -> bool:
    status, body = api.get(f"/api/sessions/{uuid}/episodes/")
    expect(status, body, 200, "GET episodes")
    return kept_date(first, body["results"][0])


def session_for(api: Api, conversation: Conversation, fresh: bool, replay: Replay) -> str:
    """The session holding ``conversation``: reused when complete, else replayed."""
    title = title_of(conversation)
    size = len(conversation.exchanges)
    uuid = find_session(api, title, size)
    if uuid is not None and fresh:
        api.delete(f"/api/sessions/{uuid}/")
        uuid = None
    if uuid is not None:
        if replay.dated is None:
            replay.dated = replayed_dated(api, uuid, conversation.sessions[0][0])
        return uuid
    uuid = expect(*api.post("/api/sessions/", {"title": title}), 201, "POST /api/sessions/")["id"]
    start = time.perf_counter()
    for day in conversation.sessions:
        post_session(api, uuid, day, replay)
    replay.seconds += time.perf_counter() - start
    return uuid
