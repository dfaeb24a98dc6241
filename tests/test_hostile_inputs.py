"""Hostile values in every field and parameter a caller controls: each is
answered with a 2xx, or a 4xx whose JSON body says what is wrong, never a
500, and what was stored before is still there afterwards.

The values are those a probe throws first: a NUL byte (PostgreSQL's text
refuses it), a lone surrogate (not encodable as UTF-8), the full-text
query syntax of both databases, SQL and format-string fragments, numbers
out of every range, and types other than the one expected.
"""

from __future__ import annotations

import json
from urllib.parse import quote, urlencode

import pytest

from sessions_app.models import Episode
from sessions_app.services import episodes_bulk_create

pytestmark = pytest.mark.django_db

TEXTS = [
    "\x00",
    "before\x00after",
    "\ud800 lone surrogate",
    "a & | ! ( ) : * <-> b",
    '"unbalanced NEAR( OR AND NOT * ^ -',
    "' OR 1=1; DROP TABLE sessions_app_episode; --",
    "%s %(name)s {0} {name} \\",
    "\u202e\u200d👩‍👩‍👧 ﷽ \U0010ffff",
    " \t\n ",
]
NUMBERS = ["-1", "0", "1e9", "NaN", "inf", "abc", "99999999999999999999999", "1.5", "", "\x00"]
DATES = [
    "garbage",
    "2026-13-45",
    "0001-01-01T00:00:00+00:00",
    "9999-12-31T23:59:59-14:00",
    "2026-01-01",
    "\x00",
]
JSON_VALUES = [None, 7, 1.5e308, [], {}, ["x"], {"nested": {"deep": [1, {"x": "\x00"}]}}, True, "\x00"]


def _assert_answered(response) -> None:
    assert response.status_code < 500, (response.status_code, response.content[:300])
    if response.status_code >= 400:
        assert response["Content-Type"].startswith("application/json"), response.content[:300]
        assert response.content.strip(), "a 4xx says what is wrong"


def _form(values: dict[str, str]) -> str:
    """Query or form text as a hostile client writes it: a lone surrogate as
    its three bytes, percent-encoded (no browser sends them; a script can)."""
    return urlencode(values, encoding="utf-8", errors="surrogatepass")


def _url(path: str, params: dict[str, str]) -> str:
    """``path`` and ``params`` as a hostile client writes them, percent-encoded
    (``_form``): nothing the test client would refuse to send is skipped."""
    quoted = quote(path, safe="/", errors="surrogatepass")
    return f"{quoted}?{_form(params)}" if params else quoted


@pytest.fixture
def stored(session):
    """Two exchanges already in the session: they must survive every probe."""
    episodes_bulk_create(
        session=session,
        items=[
            {"user_input": "The spare key is under the blue pot.", "response": "Noted."},
            {"user_input": "My train leaves at 7:40.", "response": "Got it."},
        ],
    )
    session.refresh_from_db()
    return session


def _unchanged(session) -> None:
    texts = list(Episode.objects.filter(session=session).order_by("pk").values_list("user_input", flat=True))
    assert texts[:2] == ["The spare key is under the blue pot.", "My train leaves at 7:40."]


@pytest.mark.parametrize("text", TEXTS)
def test_hostile_text_in_every_read_parameter(api_client, stored, text):
    base = f"/api/sessions/{stored.uuid}/"
    for path, params in [
        (f"{base}context/", {"question": text}),
        (f"{base}search/", {"q": text}),
        ("/api/search/", {"q": text}),
        (f"{base}episodes/", {"page": text}),
        (f"{base}episodes/since/{text}/", {}),
        (f"{base}episodes/{text}/", {}),
        (f"/api/sessions/{text}/", {}),
        ("/api/sessions/", {"page": text}),
        ("/api/notes/", {"session": text}),
        ("/api/notes/", {"end_user": text, "kind": text}),
        ("/api/sessions/", {"end_user": text, "memory_scope": text}),
        ("/api/me/export/", {"end_user": text}),
    ]:
        _assert_answered(api_client.get(_url(path, params)))
    _unchanged(stored)


@pytest.mark.parametrize("text", TEXTS)
def test_hostile_text_in_every_written_field(api_client, stored, text):
    base = f"/api/sessions/{stored.uuid}/"
    for method, path, body in [
        ("post", "/api/sessions/", {"title": text}),
        ("post", "/api/sessions/", {"title": "ok", "end_user": text}),
        ("patch", base, {"title": text}),
        ("post", f"{base}episodes/", {"user_input": text, "response": text}),
        ("post", f"{base}episodes/", {"user_input": "ok", "response": "ok", "metadata": {text: text}}),
        ("post", f"{base}episodes/", [{"user_input": text, "response": "ok"}]),
        ("post", "/api/notes/", {"kind": "fact", "text": text}),
        ("post", "/api/notes/", {"kind": text, "text": "ok"}),
        ("post", "/api/notes/", {"kind": "fact", "text": "ok", "end_user": text}),
        ("post", "/api/sessions/", {"title": "ok", "memory_scope": text}),
    ]:
        # json.dumps writes a lone surrogate as an escape, as a hostile client would send it.
        response = getattr(api_client, method)(path, json.dumps(body), content_type="application/json")
        _assert_answered(response)
    _unchanged(stored)


@pytest.mark.parametrize("number", NUMBERS)
def test_hostile_numbers_in_budgets_pages_and_limits(api_client, stored, number):
    base = f"/api/sessions/{stored.uuid}/"
    for path, params in [
        (f"{base}context/", {"question": "Where is the key?", "budget": number}),
        (f"{base}search/", {"q": "key", "limit": number}),
        ("/api/search/", {"q": "key", "limit": number}),
        (f"{base}episodes/", {"page": number, "page_size": number}),
        (f"{base}episodes/since/{number}/", {}),
    ]:
        _assert_answered(api_client.get(_url(path, params)))
    response = api_client.post(
        f"{base}chat/", json.dumps({"message": "hi", "budget": number}), content_type="application/json"
    )
    _assert_answered(response)
    _unchanged(stored)


@pytest.mark.parametrize("value", DATES)
def test_hostile_asked_at(api_client, stored, value):
    response = api_client.get(
        f"/api/sessions/{stored.uuid}/context/", {"question": "When?", "asked_at": value}
    )
    _assert_answered(response)
    if value != "0001-01-01T00:00:00+00:00" and not value.startswith("9999"):
        assert response.status_code == 400 and "asked_at" in response.json(), response.content[:300]


@pytest.mark.parametrize("value", JSON_VALUES, ids=repr)
def test_wrong_types_in_every_written_field(api_client, stored, value):
    base = f"/api/sessions/{stored.uuid}/"
    for method, path, field, rest in [
        ("post", "/api/sessions/", "title", {}),
        ("post", "/api/sessions/", "metadata", {"title": "ok"}),
        ("post", f"{base}episodes/", "user_input", {"response": "ok"}),
        ("post", f"{base}episodes/", "metadata", {"user_input": "ok", "response": "ok"}),
        ("post", f"{base}episodes/", "created_at", {"user_input": "ok", "response": "ok"}),
        ("post", "/api/notes/", "text", {"kind": "fact"}),
        ("post", "/api/notes/", "kind", {"text": "ok"}),
        ("patch", base, "metadata", {}),
    ]:
        response = getattr(api_client, method)(
            path, json.dumps({**rest, field: value}), content_type="application/json"
        )
        _assert_answered(response)
    for body in [value, [value] * 3]:
        response = api_client.post(f"{base}episodes/", json.dumps(body), content_type="application/json")
        _assert_answered(response)
    _unchanged(stored)


def test_a_body_that_is_not_json_or_not_utf8(api_client, stored):
    base = f"/api/sessions/{stored.uuid}/"
    for body in [b"{", b"\xff\xfe\x00", b"[" * 10_000 + b"]" * 10_000, b'{"user_input": "a" "b"}']:
        for path in [f"{base}episodes/", "/api/sessions/", "/api/notes/", f"{base}chat/"]:
            _assert_answered(api_client.post(path, body, content_type="application/json"))
    _unchanged(stored)


@pytest.mark.parametrize("text", TEXTS)
def test_hostile_text_in_a_chat_turn_and_the_openai_endpoints(api_client, model, stored, text):
    base = f"/api/sessions/{stored.uuid}/"
    for path, body in [
        (f"{base}chat/", {"message": text}),
        (f"{base}chat/", {"message": "hi", "asked_at": text}),
        ("/v1/chat/completions", {"model": "fake-chat", "messages": [{"role": "user", "content": text}]}),
        ("/v1/chat/completions", {"model": text, "messages": [{"role": "user", "content": "hi"}]}),
        (
            "/v1/chat/completions",
            {"model": "fake-chat", "messages": [{"role": "user", "content": "hi"}], "metadata": {text: text}},
        ),
        ("/v1/chat/completions", {"model": "fake-chat", "messages": [{"role": text, "content": "hi"}]}),
        ("/v1/responses", {"model": "fake-chat", "input": text}),
        ("/v1/responses", {"model": "fake-chat", "input": "hi", "previous_response_id": text}),
    ]:
        response = api_client.post(path, json.dumps(body), content_type="application/json")
        assert response.status_code < 500, (path, response.status_code, response.content[:300])
    response = api_client.get(f"/v1/models/{text}") if "\x00" not in text and "\ud800" not in text else None
    assert response is None or response.status_code < 500
    _unchanged(stored)


@pytest.mark.parametrize("text", TEXTS)
def test_hostile_text_in_the_web_pages(client, owner, stored, text):
    client.force_login(owner)
    for path, params in [
        ("/", {"q": text, "page": text}),
        (f"/sessions/{stored.uuid}/", {"page": text}),
        ("/memory/", {"end_user": text, "page": text}),
    ]:
        response = client.get(f"{path}?{_form(params)}")
        assert response.status_code < 500, (path, response.status_code)
    for path, data in [
        ("/", {"title": text}),
        (f"/sessions/{stored.uuid}/rename/", {"title": text}),
        (f"/sessions/{stored.uuid}/memory/", {"memory_scope": text}),
    ]:
        response = client.post(path, _form(data), content_type="application/x-www-form-urlencoded")
        assert response.status_code < 500, (path, response.status_code)
    _unchanged(stored)


def test_an_error_quoting_a_lone_surrogate_is_still_json_naming_the_field(api_client):
    # A choice's error message quotes what was sent; UTF-8 cannot hold it, its escape can.
    response = api_client.post(
        "/api/notes/", json.dumps({"kind": "\ud800", "text": "ok"}), content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json() == {"kind": ['"\ud800" is not a valid choice.']}
    assert b"\\ud800" in response.content


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize(
    "reply", ["nul \x00 in the reply", "lone \ud800 surrogate"], ids=["nul", "surrogate"]
)
def test_a_model_reply_the_database_cannot_store_is_stored_with_replacement_characters(
    api_client, model, session, reply, stream
):
    # What a model server sends as JSON escapes; the turn must not be lost to it.
    model.set_mode("ok", answers=[reply] * 2)
    stored = reply.replace("\x00", "\ufffd").replace("\ud800", "\ufffd")
    chat = api_client.post(
        f"/api/sessions/{session.uuid}/chat/",
        json.dumps({"message": "hi", "stream": stream}),
        content_type="application/json",
    )
    v1 = api_client.post(
        "/v1/chat/completions",
        json.dumps(
            {
                "model": "fake-chat",
                "stream": stream,
                "messages": [{"role": "user", "content": "hi again"}],
                "metadata": {"nexus_session": str(session.uuid)},
            }
        ),
        content_type="application/json",
    )
    for response in (chat, v1):
        body = b"".join(response.streaming_content) if response.streaming else response.content
        assert response.status_code in (200, 201), body[:300]
        assert "\ufffd".encode() in body or b"\\ufffd" in body
    assert list(Episode.objects.filter(session=session).values_list("response", flat=True)) == [
        stored,
        stored,
    ]


def test_a_null_character_in_the_exports_end_user_is_a_400_naming_it(api_client, stored):
    response = api_client.get("/api/me/export/", {"end_user": "a\x00b"})
    assert response.status_code == 400
    assert list(response.json()) == ["end_user"]
    response = api_client.get("/api/me/export/", {"end_user": "x" * 201})
    assert response.status_code == 400 and list(response.json()) == ["end_user"]
