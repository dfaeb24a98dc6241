"""Every path that writes episodes holds them to the same limits
(``sessions_app.validation``): the REST API (one episode, a list), the
import of history by ``/v1/chat/completions`` and ``import_transcript``.
The same episode is refused on each, naming the field, with nothing
stored; what one path stores, an export carries to the importer intact,
however many episodes a session holds."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from sessions_app.models import ChatSession, Episode
from sessions_app.validation import batch_problem, episode_problems

pytestmark = pytest.mark.django_db

LIMIT = 40


@pytest.fixture(autouse=True)
def small_limits(settings):
    settings.EPISODE_MAX_CHARS = LIMIT
    settings.API_BULK_MAX_EPISODES = 3
    settings.API_METADATA_MAX_BYTES = 64
    settings.CHAT_MODEL = "fake-chat"


# (episode, the field a refusal names)
BAD = [
    ({"user_input": "x" * (LIMIT + 1), "response": "ok"}, "user_input"),
    ({"user_input": "ok", "response": "é" * (LIMIT + 1)}, "response"),
    ({"user_input": "", "response": "ok"}, "user_input"),
    ({"user_input": "nul \x00", "response": "ok"}, "user_input"),
    ({"user_input": "ok", "response": "lone \ud800"}, "response"),
    ({"user_input": "ok", "response": "ok", "metadata": {"k": "v" * 80}}, "metadata"),
]
IDS = ["long-question", "long-answer", "empty-question", "nul", "surrogate", "big-metadata"]


def body(value) -> str:
    # ensure_ascii: a lone surrogate travels as the \ud800 escape clients send.
    return json.dumps(value)


@pytest.mark.parametrize(("episode", "field"), BAD, ids=IDS)
def test_the_one_check_names_the_field(episode, field):
    assert set(episode_problems(**episode)) == {field}


@pytest.mark.parametrize(("episode", "field"), BAD, ids=IDS)
def test_rest_api_refuses_it_alone_and_in_a_list(api_client, session, episode, field):
    url = f"/api/sessions/{session.uuid}/episodes/"
    one = api_client.post(url, body(episode), content_type="application/json")
    assert one.status_code == 400, one.content
    assert field in one.json()
    many = api_client.post(url, body([{"user_input": "a", "response": "b"}, episode]), content_type="application/json")
    assert many.status_code == 400, many.content
    assert field in many.json()["1"]
    assert not Episode.objects.exists()


# /v1 imports no metadata, and a blank question is not a pair it imports.
V1_BAD = [BAD[0], BAD[1], BAD[3], BAD[4]]


@pytest.mark.parametrize(("episode", "field"), V1_BAD, ids=["long-question", "long-answer", "nul", "surrogate"])
def test_v1_history_import_refuses_it_naming_the_message(owner, episode, field):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {Token.objects.create(user=owner).key}")
    messages = [
        {"role": "user", "content": episode["user_input"]},
        {"role": "assistant", "content": episode["response"]},
        {"role": "user", "content": "And now?"},
    ]
    response = client.post(
        "/v1/chat/completions", body({"model": "fake-chat", "messages": messages}), content_type="application/json"
    )
    assert response.status_code == 400, response.content
    index = 0 if field == "user_input" else 1
    assert response.json()["error"]["param"] == f"messages[{index}].content"
    assert not ChatSession.objects.exists() and not Episode.objects.exists()


@pytest.mark.parametrize(("episode", "field"), BAD, ids=IDS)
def test_import_transcript_refuses_it_by_its_line(owner, tmp_path, episode, field):
    path = tmp_path / "t.jsonl"
    path.write_text(body({"user_input": "a", "response": "b"}) + "\n" + body(episode) + "\n")
    err = io.StringIO()
    with pytest.raises(CommandError, match="nothing was imported"):
        call_command("import_transcript", str(path), "--owner", "owner", stderr=err, stdout=io.StringIO())
    assert f'line 2: "{field}"' in err.getvalue()
    assert not ChatSession.objects.exists()


def test_one_call_stores_at_most_the_bulk_limit_on_each_path(api_client, owner, session):
    assert batch_problem(3) is None and batch_problem(4) and batch_problem(0)
    pairs = [{"user_input": f"q{n}", "response": f"a{n}"} for n in range(4)]
    rest = api_client.post(f"/api/sessions/{session.uuid}/episodes/", body(pairs), content_type="application/json")
    assert rest.status_code == 400 and "non_field_errors" in rest.json()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {Token.objects.create(user=owner).key}")
    messages = [m for p in pairs for m in ({"role": "user", "content": p["user_input"]},
                                           {"role": "assistant", "content": p["response"]})]  # fmt: skip
    v1 = client.post(
        "/v1/chat/completions",
        body({"model": "fake-chat", "messages": [*messages, {"role": "user", "content": "now?"}]}),
        content_type="application/json",
    )
    assert v1.status_code == 400 and v1.json()["error"]["param"] == "messages"
    assert not Episode.objects.exists() and ChatSession.objects.count() == 1


def test_a_session_longer_than_one_call_exports_and_imports_back(api_client, owner, session, tmp_path):
    url = f"/api/sessions/{session.uuid}/episodes/"
    for start in (0, 3, 6):
        batch = [{"user_input": "q" * LIMIT, "response": f"a{n}", "metadata": {"n": n}} for n in range(start, start + 3)]
        assert api_client.post(url, body(batch), content_type="application/json").status_code == 201
    out = io.StringIO()
    call_command("export_session", str(session.uuid), stdout=out)
    path = tmp_path / "s.jsonl"
    path.write_text(out.getvalue())
    call_command("import_transcript", str(path), "--owner", "owner", stdout=io.StringIO())
    copy = ChatSession.objects.exclude(pk=session.pk).get()
    assert list(Episode.objects.filter(session=copy).order_by("position").values_list("response", flat=True)) == [
        f"a{n}" for n in range(9)
    ]
