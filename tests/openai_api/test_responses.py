"""``POST /v1/responses`` through the official ``openai`` package, against a
live server and the fake model server."""

from __future__ import annotations

import openai
import pytest

from sessions_app.models import ChatSession, Episode
from tests.factories import ChatSessionFactory
from tests.fake_model_server import reply_text
from tests.openai_api.conftest import chat_requests

pytestmark = pytest.mark.django_db(transaction=True)

IMAGE = {"type": "input_image", "image_url": "https://example.com/cat.png"}
STREAM_EVENTS = [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    "response.completed",
]


def create(client, question, **kwargs):
    kwargs.setdefault("model", "fake-chat")
    return client.responses.with_raw_response.create(input=question, **kwargs)


def test_plain_response_is_answered_and_stored(client, model):
    raw = create(
        client,
        "What is the capital of Peru?",
        instructions="Answer in one word.",
        reasoning={"effort": "low"},
        text={"verbosity": "low", "format": {"type": "text"}},
        service_tier="auto",
        safety_identifier="user-hash-1",
        prompt_cache_key="peru",
        tools=[],
        include=[],
    )
    response = raw.parse()
    assert (
        response.object == "response" and response.status == "completed" and response.id.startswith("resp_")
    )
    assert response.output_text == reply_text("What is the capital of Peru?")
    assert response.model == "fake-chat" and response.service_tier == "default"
    assert response.usage.total_tokens == response.usage.input_tokens + response.usage.output_tokens > 0
    episode = Episode.objects.get(session__uuid=raw.headers["X-Nexus-Session"])
    assert (episode.user_input, episode.response) == ("What is the capital of Peru?", response.output_text)
    sent = chat_requests(model, "What is the capital of Peru?")[-1]["messages"]
    assert sent[0] == {"role": "system", "content": "Answer in one word."}
    assert sent[-1] == {"role": "user", "content": "What is the capital of Peru?"}


def test_streamed_response_has_the_responses_events(client, model, owner):
    session = ChatSessionFactory(owner=owner)
    stream = client.responses.create(
        model="fake-chat",
        input=[
            {"role": "developer", "content": "Be brief."},
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Tell me a tale"}],
            },
        ],
        stream=True,
        extra_headers={"X-Nexus-Session": str(session.uuid)},
    )
    events = list(stream)
    kinds = [e.type for e in events]
    assert [
        k for n, k in enumerate(kinds) if k != "response.output_text.delta" or kinds[n - 1] != k
    ] == STREAM_EVENTS
    assert [e.sequence_number for e in events] == list(range(len(events)))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == reply_text("Tell me a tale") and kinds.count("response.output_text.delta") > 1
    completed = events[-1].response
    assert completed.output_text == text and completed.usage.output_tokens > 0
    assert events[0].response.id == completed.id and events[0].response.status == "in_progress"
    assert Episode.objects.get(session=session).response == text
    assert chat_requests(model, "Tell me a tale")[-1]["messages"][0] == {
        "role": "system",
        "content": "Be brief.",
    }


def test_previous_response_id_continues_the_same_memory(client, other_client, model):
    first = create(client, "My lizard is called Pemberton.")
    session = first.headers["X-Nexus-Session"]
    second = create(client, "What is my lizard called?", previous_response_id=first.parse().id)
    assert second.headers["X-Nexus-Session"] == session
    assert second.parse().previous_response_id == first.parse().id
    assert "Pemberton" in chat_requests(model, "What is my lizard called?")[-1]["messages"][-2]["content"]
    assert Episode.objects.filter(session__uuid=session).count() == 2
    unstored = create(client, "Do not keep this", previous_response_id=second.parse().id, store=False).parse()
    assert Episode.objects.filter(session__uuid=session).count() == 2
    forged = first.parse().id[:-1] + ("0" if first.parse().id[-1] != "0" else "1")
    for caller, previous in (
        (client, "resp_unknown"),
        (client, forged),
        (client, unstored.id),
        (other_client, first.parse().id),
    ):
        with pytest.raises(openai.NotFoundError) as caught:
            create(caller, "Hello?", previous_response_id=previous)
        assert caught.value.body["param"] == "previous_response_id"
        assert caught.value.body["code"] == "previous_response_not_found"
    theirs = ChatSessionFactory(owner=ChatSession.objects.get(uuid=session).owner)
    with pytest.raises(openai.BadRequestError) as caught:
        create(
            client,
            "Hi",
            previous_response_id=first.parse().id,
            extra_headers={"X-Nexus-Session": str(theirs.uuid)},
        )
    assert caught.value.body["param"] == "previous_response_id"


def test_store_false_reads_the_memory_and_stores_nothing(client, model, owner):
    session = ChatSessionFactory(owner=owner)
    metadata = {"nexus_session": str(session.uuid)}
    create(client, "My kite is bright orange.", metadata=metadata)
    for stream in (False, True):
        raw = create(client, "What colour is my kite?", metadata=metadata, store=False, stream=stream)
        if stream:
            assert list(raw.parse())[-1].response.output_text == reply_text("What colour is my kite?")
        else:
            assert raw.parse().store is False
    for sent in chat_requests(model, "What colour is my kite?"):
        assert "bright orange" in sent["messages"][-2]["content"]
    assert Episode.objects.filter(session=session).count() == 1
    create(client, "A stateless question", store=False)
    assert ChatSession.objects.count() == 1


@pytest.mark.parametrize(
    ("extra", "param", "code"),
    [
        ({"tools": [{"type": "function", "name": "f", "parameters": {}}]}, "tools", "unsupported_parameter"),
        ({"text": {"format": {"type": "json_object"}}}, "text.format", "unsupported_parameter"),
        ({"reasoning": {"effort": "enormous"}}, "reasoning.effort", "invalid_value"),
        ({"text": {"verbosity": "chatty"}}, "text.verbosity", "invalid_value"),
        ({"input": [{"type": "function_call_output", "call_id": "c"}]}, "input[0]", "unsupported_parameter"),
        ({"input": [{"role": "user", "content": [IMAGE]}]}, "input[0].content[0]", "unsupported_parameter"),
        ({"extra_body": {"reasoning_effort": "low"}}, "reasoning_effort", "unknown_parameter"),
        ({"background": True}, "background", "unsupported_parameter"),
        ({"background": "yes"}, "background", "unsupported_parameter"),
        ({"metadata": {"nexus_asked_at": "yesterday"}}, "metadata.nexus_asked_at", "invalid_value"),
        ({"input": [{"role": "assistant", "content": "Hello"}]}, "input", "invalid_value"),
        ({"instructions": "Be \x00 brief"}, "instructions", "invalid_value"),
        ({"previous_response_id": 7}, "previous_response_id", "invalid_value"),
    ],
)  # fmt: skip
def test_what_nexus_cannot_do_names_the_field(client, model, extra, param, code):
    kwargs = {"input": "Hi", **extra}
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model="fake-chat", **kwargs)
    assert (caught.value.body["param"], caught.value.body["code"]) == (param, code)
    assert not Episode.objects.exists()


def test_unknown_model_and_model_failure(client, model, settings):
    with pytest.raises(openai.NotFoundError) as caught:
        create(client, "Hi", model="gpt-5")
    assert caught.value.body["code"] == "model_not_found"
    model.set_mode("http_500")
    for stream in (False, True):
        with pytest.raises(openai.InternalServerError):
            create(client, "Hi", stream=stream)
    assert not Episode.objects.exists()


def test_end_user_and_idempotency_key_as_on_chat_completions(client, model):
    # Each new conversation is a session of its own, the end user's, sharing its memory.
    first = create(client, "I am Ann", user="ann").headers["X-Nexus-Session"]
    second = create(client, "Still Ann", user="ann").headers["X-Nexus-Session"]
    assert first != second
    people = {(str(s.uuid), s.end_user, s.memory_scope) for s in ChatSession.objects.all()}
    assert people == {(first, "ann", "shared"), (second, "ann", "shared")}
    for stream in (False, True):
        key = {"Idempotency-Key": f"responses-retry-{stream}"}
        answers = [create(client, f"Asked once {stream}", stream=stream, extra_headers=key) for _ in range(2)]
        assert answers[1].headers["Idempotent-Replayed"] == "true"
        if stream:
            ids = [list(a.parse())[-1].response.id for a in answers]
        else:
            ids = [a.parse().id for a in answers]
        assert ids[0] == ids[1]
        assert len(chat_requests(model, f"Asked once {stream}")) == 1
    assert Episode.objects.filter(user_input__startswith="Asked once").count() == 2


def test_a_stream_the_model_cuts_ends_in_an_error_event_and_stores_nothing(client, model):
    model.set_mode("cut_stream")
    stream = client.responses.create(model="fake-chat", input="Tell me everything", stream=True)
    kinds = []
    with pytest.raises(openai.APIError) as caught:
        for event in stream:
            kinds.append(event.type)
    assert kinds[0] == "response.created" and "response.completed" not in kinds
    assert caught.value.body["type"] == "server_error"
    assert not Episode.objects.exists()
