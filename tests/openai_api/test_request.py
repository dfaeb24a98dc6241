"""Request checks and the memory message, without a server."""

from __future__ import annotations

import pytest

from sessions_app.services import episode_create
from summaries.context import build_context
from summaries.openai_api.errors import OpenAIError
from summaries.openai_api.memory import memory_text, model_messages
from summaries.openai_api.request import parse_request
from summaries.openai_api.sessions import history_pairs


@pytest.fixture(autouse=True)
def chat_model(settings):
    settings.CHAT_MODEL = "fake-chat"


def body(**extra):
    return {"model": "fake-chat", "messages": [{"role": "user", "content": "Hi"}], **extra}


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"tools": [{"type": "function"}]}, "tools"),
        ({"tool_choice": "auto"}, "tool_choice"),
        ({"functions": [{"name": "f"}]}, "functions"),
        ({"n": 3}, "n"),
        ({"logprobs": True}, "logprobs"),
        ({"audio": {"voice": "x"}}, "audio"),
        ({"response_format": {"type": "json_object"}}, "response_format"),
        ({"temperature": 3}, "temperature"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"stop": ["a", "b", "c", "d", "e"]}, "stop"),
        ({"metadata": {"nexus_budget": "lots"}}, "metadata.nexus_budget"),
        ({"bogus": 1}, "bogus"),
        (
            {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]},
            "messages[0].content[0]",
        ),
        ({"messages": [{"role": "assistant", "content": "x"}]}, "messages"),
    ],
)
def test_unsupported_or_bad_parameters_name_the_param(extra, param):
    with pytest.raises(OpenAIError) as caught:
        parse_request(body(**extra), header_session=None)
    assert caught.value.status == 400 and caught.value.param == param


def test_neutral_values_are_accepted():
    request = parse_request(
        body(n=1, logprobs=False, parallel_tool_calls=True, store=False, presence_penalty=0, frequency_penalty=0,
             response_format={"type": "text"}, metadata={"nexus_budget": "1500"}, max_completion_tokens=50),
        header_session=None,
    )  # fmt: skip
    assert request.budget == 1500 and request.max_tokens == 50
    assert request.sampling == {"presence_penalty": 0.0, "frequency_penalty": 0.0}


def test_unknown_model_is_404():
    with pytest.raises(OpenAIError) as caught:
        parse_request(body(model="gpt-4o"), header_session=None)
    assert (caught.value.status, caught.value.code) == (404, "model_not_found")


def test_history_pairs_skip_unanswered_messages():
    request = parse_request(
        body(messages=[
            {"role": "user", "content": "a"}, {"role": "user", "content": "b"}, {"role": "assistant", "content": "B"},
            {"role": "system", "content": "sys"}, {"role": "user", "content": "q"},
        ]),
        header_session=None,
    )  # fmt: skip
    assert [(p["user_input"], p["response"]) for p in history_pairs(request.history)] == [("b", "B")]
    assert [m.content for m in request.instructions] == ["sys"]


def test_memory_leaves_out_question_and_instructions(session):
    episode_create(session=session, user_input="My cat is Tom.", response="Noted.")
    context = build_context(session=session, question="Cat?")
    memory = memory_text(context, "Cat?")
    assert memory.startswith("Previous conversation:") and "My cat is Tom." in memory
    assert "Cat?" not in memory and "Instructions" not in memory
    request = parse_request(
        body(messages=[{"role": "developer", "content": "Be terse."}, {"role": "user", "content": "Cat?"}]),
        header_session=None,
    )
    messages = model_messages(request, context)
    assert [m["role"] for m in messages] == ["system", "system", "user"] and messages[-1]["content"] == "Cat?"


def test_empty_session_sends_no_memory_message(session):
    request = parse_request(body(), header_session=None)
    assert model_messages(request, build_context(session=session, question="Hi")) == [
        {"role": "user", "content": "Hi"}
    ]


@pytest.mark.parametrize("text", ["nul \x00 inside", "lone \ud800 surrogate"])
def test_text_the_database_cannot_store_is_refused_naming_the_message(text):
    with pytest.raises(OpenAIError) as raised:
        parse_request(body(messages=[{"role": "user", "content": text}]), header_session=None)
    assert raised.value.status == 400 and raised.value.param == "messages[0].content"
