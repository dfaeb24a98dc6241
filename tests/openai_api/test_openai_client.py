"""``/v1/chat/completions`` through the official ``openai`` package, against
a live server and the fake model server (Ollama and OpenAI)."""

from __future__ import annotations

import threading
import time
import uuid

import openai
import pytest

from sessions_app.models import ChatSession, Episode
from summaries.inference import ChatStream
from summaries.inference.base import Stopwatch
from summaries.inference.offline import OfflineClient
from tests.factories import ChatSessionFactory
from tests.fake_model_server import reply_text
from tests.openai_api.conftest import chat_requests, client_for

pytestmark = pytest.mark.django_db(transaction=True)


def ask(client, question: str, **kwargs):
    return client.chat.completions.with_raw_response.create(
        model="fake-chat", messages=[{"role": "user", "content": question}], **kwargs
    )


@pytest.mark.parametrize("backend", ["ollama", "openai"])
def test_plain_reply_usage_and_session_header(client, model, settings, backend):
    settings.INFERENCE_BACKEND = backend
    raw = ask(
        client, "What is the capital of France?", user="alice", temperature=0.2, seed=7, n=1, logprobs=False
    )
    completion = raw.parse()
    assert completion.object == "chat.completion"
    assert completion.choices[0].message.content == reply_text("What is the capital of France?")
    assert completion.choices[0].finish_reason == "stop"
    assert (
        completion.usage.total_tokens
        == completion.usage.prompt_tokens + completion.usage.completion_tokens
        > 0
    )
    session = ChatSession.objects.get(uuid=raw.headers["X-Nexus-Session"])
    episode = Episode.objects.get(session=session)
    assert episode.response == completion.choices[0].message.content
    assert episode.metadata["openai_user"] == "alice"
    assert (session.end_user, session.memory_scope) == ("alice", "shared")
    sent = chat_requests(model, "What is the capital of France?")[-1]
    if backend == "ollama":
        assert "user" not in sent and sent["options"]["seed"] == 7
    else:
        assert sent["user"] == "alice" and sent["seed"] == 7


@pytest.mark.parametrize("backend", ["ollama", "openai"])
def test_streamed_reply_equals_stored_episode(client, model, settings, backend):
    settings.INFERENCE_BACKEND = backend
    session = ChatSessionFactory(
        owner=ChatSession._meta.get_field("owner").related_model.objects.get(username="owner")
    )
    stream = client.chat.completions.create(
        model="fake-chat",
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Tell me a story"}],
        stream=True,
        stream_options={"include_usage": True},
        extra_headers={"X-Nexus-Session": str(session.uuid)},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == reply_text("Tell me a story")
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0
    assert Episode.objects.get(session=session).response == text
    sent = chat_requests(model, "Tell me a story")[-1]["messages"]
    assert sent[0] == {"role": "system", "content": "Be brief."}


def test_session_named_in_metadata_and_conflict(client, model, owner):
    session = ChatSessionFactory(owner=owner)
    raw = ask(client, "Hello there", metadata={"nexus_session": str(session.uuid), "nexus_budget": "3000"})
    assert raw.headers["X-Nexus-Session"] == str(session.uuid)
    with pytest.raises(openai.BadRequestError) as caught:
        ask(
            client,
            "Hello",
            metadata={"nexus_session": str(uuid.uuid4())},
            extra_headers={"X-Nexus-Session": str(session.uuid)},
        )
    assert caught.value.body["param"] == "metadata.nexus_session"


def test_memory_across_calls_reaches_the_model(client, model, owner, settings):
    settings.CONTEXT_RECENT_EPISODES = 2
    session = ChatSessionFactory(owner=owner)
    header = {"X-Nexus-Session": str(session.uuid)}
    ask(client, "My cat is called Zorblax.", extra_headers=header)
    for n in range(4):
        ask(client, f"Unrelated question number {n} about the weather", extra_headers=header)
    ask(client, "What is my cat called?", extra_headers=header)
    messages = chat_requests(model, "What is my cat called?")[-1]["messages"]
    assert messages[-1] == {"role": "user", "content": "What is my cat called?"}
    memory = messages[-2]
    assert memory["role"] == "system" and "Zorblax" in memory["content"]
    assert "User Question:" not in memory["content"] and "Instructions:" not in memory["content"]


def test_user_field_names_the_end_user_of_each_new_conversation(client, model):
    # Each conversation is a session of its own; their memory is shared by end user.
    first = ask(client, "I am Ann", user="ann").headers["X-Nexus-Session"]
    second = ask(client, "Still Ann", user="ann").headers["X-Nexus-Session"]
    bob = ask(client, "I am Bob", user="bob").headers["X-Nexus-Session"]
    assert len({first, second, bob}) == 3
    people = {(str(s.uuid), s.end_user, s.memory_scope) for s in ChatSession.objects.all()}
    assert people == {(first, "ann", "shared"), (second, "ann", "shared"), (bob, "bob", "shared")}
    assert Episode.objects.filter(session__uuid=first).count() == 1


def test_stateless_history_is_imported(client, model):
    raw = client.chat.completions.with_raw_response.create(
        model="fake-chat",
        messages=[
            {"role": "user", "content": "My dog is Rex."},
            {"role": "assistant", "content": "Nice dog."},
            {
                "role": "user",
                "content": [{"type": "text", "text": "What is my"}, {"type": "text", "text": "dog called?"}],
            },
        ],
    )
    episodes = list(Episode.objects.filter(session__uuid=raw.headers["X-Nexus-Session"]).order_by("id"))
    assert [(e.user_input, e.response) for e in episodes[:1]] == [("My dog is Rex.", "Nice dog.")]
    assert episodes[1].user_input == "What is my\ndog called?"
    assert "Rex" in chat_requests(model, "What is my\ndog called?")[-1]["messages"][-2]["content"]


def test_isolation_bad_token_unsupported_and_unknown_model(
    client, other_client, live_server, model, other_user
):
    theirs = ChatSessionFactory(owner=other_user)
    with pytest.raises(openai.NotFoundError) as caught:
        ask(client, "Hi", extra_headers={"X-Nexus-Session": str(theirs.uuid)})
    assert caught.value.body["code"] == "session_not_found"
    with pytest.raises(openai.AuthenticationError):
        ask(client_for(live_server, "not-a-token"), "Hi")
    for extra in ({"tools": [{"type": "function", "function": {"name": "f"}}]}, {"n": 2}, {"logprobs": True}):
        with pytest.raises(openai.BadRequestError) as caught:
            ask(client, "Hi", **extra)
        assert caught.value.body["param"] == next(iter(extra))
    with pytest.raises(openai.NotFoundError) as caught:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "Hi"}])
    assert caught.value.body["code"] == "model_not_found"
    assert [m.id for m in client.models.list()] == ["fake-chat"]
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("gpt-4o")
    assert client.models.retrieve("fake-chat").id == "fake-chat"


@pytest.mark.parametrize(("mode", "status"), [("http_500", 503), ("http_400", 502)])
def test_model_failure_stores_nothing(client, model, owner, mode, status):
    session = ChatSessionFactory(owner=owner)
    model.set_mode(mode)
    for stream in (False, True):
        with pytest.raises(openai.APIStatusError) as caught:
            ask(client, "Hi", stream=stream, extra_headers={"X-Nexus-Session": str(session.uuid)})
        assert caught.value.status_code == status
    assert not Episode.objects.filter(session=session).exists()


class SlowStreamClient(OfflineClient):
    """Streams one chunk, then waits until released, then many more."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.closed = threading.Event()

    def _chat_stream(self, messages, **kwargs):
        def chunks():
            try:
                yield "first "
                self.release.wait(10)
                for _ in range(500):
                    time.sleep(0.005)
                    yield "more "
            finally:
                self.closed.set()

        return ChatStream(chunks(), lambda text: self._offline(text, messages, self._watch()))

    def _watch(self):
        return Stopwatch()


def test_disconnect_mid_stream_stores_nothing(client, use_client, settings, owner):
    fake = use_client(SlowStreamClient())
    settings.CHAT_MODEL = "fake-chat"
    session = ChatSessionFactory(owner=owner)
    stream = client.chat.completions.create(
        model="fake-chat",
        messages=[{"role": "user", "content": "Hi"}],
        stream=True,
        extra_headers={"X-Nexus-Session": str(session.uuid)},
    )
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            break
    stream.close()
    fake.release.set()
    assert fake.closed.wait(10)
    assert not Episode.objects.filter(session=session).exists()


def test_nexus_backend_has_no_chat(client, model, settings):
    settings.INFERENCE_BACKEND = "nexus"
    with pytest.raises(openai.InternalServerError) as caught:
        ask(client, "Hi")
    assert caught.value.status_code == 503 and caught.value.body["code"] == "chat_backend_unavailable"


def test_a_chat_model_server_named_by_its_v1_base_url_answers(client, model, settings):
    # As OpenAI-compatible servers document it (".../v1"): not /v1/v1/..., not a 502.
    settings.INFERENCE_BACKEND = "openai"
    settings.INFERENCE_SERVICE_URL = f"{model.url}/v1"
    completion = ask(client, "Where is the base URL?").parse()
    assert completion.choices[0].message.content == reply_text("Where is the base URL?")
    assert chat_requests(model, "Where is the base URL?")
    assert {r["path"] for r in model.requests} == {"/v1/chat/completions"}
