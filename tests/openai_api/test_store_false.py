"""``store: false`` on /v1/chat/completions: the memory is read, nothing is stored."""

from __future__ import annotations

import pytest

from sessions_app.models import ChatSession, Episode
from tests.factories import ChatSessionFactory
from tests.fake_model_server import reply_text
from tests.openai_api.conftest import chat_requests

pytestmark = pytest.mark.django_db(transaction=True)


def ask(client, messages, **kwargs):
    return client.chat.completions.with_raw_response.create(model="fake-chat", messages=messages, **kwargs)


def user(text):
    return {"role": "user", "content": text}


def test_named_session_is_read_and_left_as_it_was(client, model, owner):
    session = ChatSessionFactory(owner=owner)
    header = {"X-Nexus-Session": str(session.uuid)}
    ask(client, [user("My parrot is called Quillby.")], extra_headers=header)
    for stream in (False, True):
        raw = ask(
            client, [user("What is my parrot called?")], store=False, stream=stream, extra_headers=header
        )
        if stream:
            text = "".join(c.choices[0].delta.content or "" for c in raw.parse() if c.choices)
        else:
            text = raw.parse().choices[0].message.content
        assert text == reply_text("What is my parrot called?")
        assert raw.headers["X-Nexus-Session"] == str(session.uuid)
    for sent in chat_requests(model, "What is my parrot called?"):
        assert "Quillby" in sent["messages"][-2]["content"]
    assert [e.user_input for e in Episode.objects.filter(session=session)] == ["My parrot is called Quillby."]


def test_stateless_history_reaches_the_model_and_nothing_is_made(client, model):
    history = [user("My boat is the Sea Otter."), {"role": "assistant", "content": "Lovely name."}]
    raw = ask(client, [*history, user("What is my boat called?")], store=False)
    assert raw.parse().choices[0].message.content == reply_text("What is my boat called?")
    assert "X-Nexus-Session" not in raw.headers
    assert "Sea Otter" in chat_requests(model, "What is my boat called?")[-1]["messages"][-2]["content"]
    assert not ChatSession.objects.exists() and not Episode.objects.exists()


def test_end_user_session_is_read_but_never_made(client, model):
    raw = ask(client, [user("Hello, I am new")], user="newcomer", store=False)
    assert "X-Nexus-Session" not in raw.headers and not ChatSession.objects.exists()
    told = ask(client, [user("I like green tea.")], user="newcomer")
    first = told.headers["X-Nexus-Session"]
    # The client sends the conversation so far: that end user's session of it is found, and read.
    reply = {"role": "assistant", "content": told.parse().choices[0].message.content}
    raw = ask(
        client,
        [user("I like green tea."), reply, user("What do I like to drink?")],
        user="newcomer",
        store=False,
    )
    assert raw.headers["X-Nexus-Session"] == first
    assert "green tea" in chat_requests(model, "What do I like to drink?")[-1]["messages"][-2]["content"]
    assert Episode.objects.filter(session__uuid=first).count() == 1
    assert ChatSession.objects.count() == 1
