"""``/v1/chat/completions`` stores what the REST API would store and nothing
more: its imported history, its ``user`` and its messages meet the same
limits (``sessions_app.validation``), answered 400 naming the parameter; a
body over the size limit is a 413 and an oversized ``max_tokens`` a 400,
never a 5xx. Whatever it stored can be exported and imported back."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from sessions_app.models import ChatSession, Episode

pytestmark = pytest.mark.django_db


@pytest.fixture
def bearer(owner) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {Token.objects.create(user=owner).key}")
    return client


def chat(client, messages, **extra):
    body = {"model": "fake-chat", "messages": messages, **extra}
    return client.post("/v1/chat/completions", json.dumps(body), content_type="application/json")


def history(pairs: int, *, text: str = "earlier") -> list[dict]:
    messages: list[dict] = []
    for n in range(pairs):
        messages += [{"role": "user", "content": f"{text} {n}"}, {"role": "assistant", "content": f"answer {n}"}]
    return messages


def error_of(response) -> dict:
    return response.json()["error"]


def test_history_of_more_pairs_than_the_bulk_limit_is_refused(bearer, model, settings):
    settings.API_BULK_MAX_EPISODES = 5
    response = chat(bearer, [*history(6), {"role": "user", "content": "Now?"}])
    assert response.status_code == 400, response.content
    assert error_of(response)["param"] == "messages"
    assert "5" in error_of(response)["message"]
    assert not ChatSession.objects.exists() and not Episode.objects.exists()
    assert not model.requests


def test_history_at_the_bulk_limit_is_imported(bearer, model, settings):
    settings.API_BULK_MAX_EPISODES = 5
    response = chat(bearer, [*history(5), {"role": "user", "content": "Now?"}])
    assert response.status_code == 200, response.content
    assert Episode.objects.count() == 6


def test_a_history_message_over_the_length_limit_is_refused(bearer, model, settings):
    settings.EPISODE_MAX_CHARS = 50
    messages = [*history(2), {"role": "user", "content": "Now?"}]
    messages[3]["content"] = "x" * 51
    response = chat(bearer, messages)
    assert response.status_code == 400, response.content
    assert error_of(response)["param"] == "messages[3].content"
    assert not ChatSession.objects.exists() and not Episode.objects.exists()


def test_user_over_its_limit_is_refused(bearer, model):
    response = chat(bearer, [{"role": "user", "content": "Hi"}], user="u" * 20_000)
    assert response.status_code == 400, response.content
    assert error_of(response)["param"] == "user"
    assert not ChatSession.objects.exists()


@pytest.mark.parametrize("user", ["a\x00b", "a\ud800b"], ids=["nul", "lone-surrogate"])
def test_user_the_database_cannot_store_is_refused(bearer, model, user):
    response = chat(bearer, [{"role": "user", "content": "Hi"}], user=user)
    assert response.status_code == 400, response.content
    assert error_of(response)["param"] == "user"
    assert not ChatSession.objects.exists()


def test_a_body_over_the_size_limit_is_a_json_413(bearer, model, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 4096
    response = chat(bearer, [{"role": "user", "content": "x" * 5000}])
    assert response.status_code == 413, response.content
    assert response["Content-Type"].startswith("application/json")
    assert error_of(response)["code"] == "payload_too_large"
    assert not ChatSession.objects.exists()


@pytest.mark.parametrize("name", ["max_tokens", "max_completion_tokens"])
def test_an_oversized_max_tokens_is_a_400(bearer, model, settings, name):
    response = chat(bearer, [{"role": "user", "content": "Hi"}], **{name: 10**9})
    assert response.status_code == 400, response.content
    assert error_of(response)["param"] == name
    assert not Episode.objects.exists()
    assert not model.requests


def test_max_tokens_the_model_window_cannot_hold_is_a_400(bearer, model, settings):
    settings.OLLAMA_NUM_CTX_MAX = 4096
    response = chat(bearer, [{"role": "user", "content": "Hi"}], max_tokens=settings.CHAT_MAX_REPLY_TOKENS)
    assert response.status_code == 400, response.content
    assert error_of(response)["param"] == "max_tokens"
    assert not Episode.objects.exists()


def test_what_v1_stores_at_its_limits_exports_and_imports_back(bearer, model, owner, settings, tmp_path):
    from summaries.openai_api.request import USER_MAX_CHARS

    settings.API_BULK_MAX_EPISODES = 3
    settings.EPISODE_MAX_CHARS = 2000
    settings.CONTEXT_DEFAULT_BUDGET = 6000
    long = ("naïve " * 400)[: settings.EPISODE_MAX_CHARS]
    messages = [*history(3), {"role": "user", "content": long}]
    messages[0]["content"] = long
    imported = chat(bearer, messages)
    assert imported.status_code == 200, imported.content
    named = chat(bearer, [{"role": "user", "content": long}], user="ü" * USER_MAX_CHARS)
    assert named.status_code == 200, named.content
    out = io.StringIO()
    call_command("export_user", owner.username, stdout=out)
    path = tmp_path / "memory.jsonl"
    path.write_text(out.getvalue(), encoding="utf-8")
    before = Episode.objects.count()
    call_command("import_transcript", str(path), owner=owner.username, stdout=io.StringIO())
    assert Episode.objects.count() == 2 * before
