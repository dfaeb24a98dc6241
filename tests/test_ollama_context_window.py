"""Ollama calls name a context window that holds the whole prompt and the
reply: what the fake model server receives as ``options.num_ctx``, the
rounding steps, the ``OLLAMA_NUM_CTX_MAX`` bound, and the clear permanent
error (with no request sent) for a prompt that cannot fit."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import pytest

from sessions_app.models import Episode
from sessions_app.tokens import count_tokens
from summaries.inference import ContextWindowExceeded, PermanentInferenceError, get_client
from tests.factories import ChatSessionFactory
from tests.fake_model_server import FakeModelServer

#: Template tokens around one message, plus the reply's header (4 + 3).
ONE_MESSAGE_OVERHEAD = 7
CALLS = ("complete", "chat", "chat_stream")


@pytest.fixture
def served(fake_model: FakeModelServer, settings) -> FakeModelServer:
    settings.INFERENCE_SERVICE_URL = fake_model.url
    settings.INFERENCE_TIMEOUT_SECONDS = 5.0
    settings.INFERENCE_CONNECT_TIMEOUT_SECONDS = 2.0
    settings.OLLAMA_NUM_CTX_MAX = 32_768
    return fake_model


def text_of(tokens: int) -> str:
    """A text of exactly ``tokens`` cl100k tokens."""
    text = " ".join(["apple"] * tokens)
    assert count_tokens(text) == tokens
    return text


def needed(content_tokens: int, max_tokens: int) -> int:
    """What one user message of ``content_tokens`` needs: +15%, rounded up, plus the reply cap."""
    return math.ceil(Fraction(content_tokens + ONE_MESSAGE_OVERHEAD) * Fraction(115, 100)) + max_tokens


def call(name: str, text: str, max_tokens: int | None) -> None:
    client = get_client("ollama")
    if name == "complete":
        client.complete(text, model="util", max_tokens=max_tokens)
    elif name == "chat":
        client.chat([{"role": "user", "content": text}], model="chat", max_tokens=max_tokens)
    else:
        list(client.chat_stream([{"role": "user", "content": text}], model="chat", max_tokens=max_tokens))


def sent_options(server: FakeModelServer) -> dict:
    (request,) = server.requests
    return request["body"]["options"]


@pytest.mark.parametrize("name", CALLS)
def test_a_small_prompt_asks_for_ollamas_default_window(served, name):
    call(name, "Tell me about routers.", 500)
    options = sent_options(served)
    assert options["num_ctx"] == 4096
    assert options["num_predict"] == 500


@pytest.mark.parametrize("name", CALLS)
def test_a_prompt_of_five_thousand_tokens_asks_for_8192(served, name):
    call(name, text_of(5000), 500)
    assert sent_options(served)["num_ctx"] == 8192


@pytest.mark.parametrize("name", CALLS)
@pytest.mark.parametrize(
    ("target", "expected"),
    [(4096, 4096), (4097, 8192), (8192, 8192), (8193, 16_384), (16_384, 16_384), (16_385, 32_768)],
)
def test_the_window_is_rounded_up_to_the_next_step(served, name, target, expected):
    content = 1000
    max_tokens = target - needed(content, 0)
    call(name, text_of(content), max_tokens)
    options = sent_options(served)
    assert (options["num_ctx"], options["num_predict"]) == (expected, max_tokens)


@pytest.mark.parametrize("name", CALLS)
def test_a_prompt_that_just_fits_the_bound_is_sent(served, settings, name):
    settings.OLLAMA_NUM_CTX_MAX = 8192
    content = 6000
    call(name, text_of(content), 8192 - needed(content, 0))
    assert sent_options(served)["num_ctx"] == 8192


@pytest.mark.parametrize("name", CALLS)
def test_a_prompt_over_the_bound_fails_permanently_before_any_request(served, settings, name):
    settings.OLLAMA_NUM_CTX_MAX = 8192
    content = 6000
    with pytest.raises(ContextWindowExceeded) as caught:
        call(name, text_of(content), 8193 - needed(content, 0))
    err = caught.value
    assert isinstance(err, PermanentInferenceError) and not err.transient
    assert err.message == "The prompt needs about 8,193 tokens of context; OLLAMA_NUM_CTX_MAX is 8,192."
    assert served.requests == []


@pytest.mark.parametrize("name", CALLS)
def test_a_bound_between_steps_is_itself_the_last_step(served, settings, name):
    settings.OLLAMA_NUM_CTX_MAX = 10_000
    call(name, text_of(1000), 9000 - needed(1000, 0))
    assert sent_options(served)["num_ctx"] == 10_000


@pytest.mark.parametrize("name", ("chat", "chat_stream"))
def test_a_chat_without_a_reply_cap_keeps_room_for_a_reply(served, name):
    # 1,024 tokens are kept for the reply; num_predict stays the server's.
    content = 2000
    call(name, text_of(content), None)
    options = sent_options(served)
    assert options == {"num_ctx": 4096}
    served.reset()
    content = 2700  # (2,707 * 1.15 = 3,113.05 -> 3,114) + 1,024 = 4,138
    call(name, text_of(content), None)
    assert sent_options(served) == {"num_ctx": 8192}


def test_every_message_and_its_template_is_counted(served):
    # Three messages: 3 x 4 template tokens + 3 for the reply's header.
    messages = [
        {"role": "system", "content": text_of(1000)},
        {"role": "user", "content": text_of(1000)},
        {"role": "assistant", "content": text_of(1000)},
    ]
    exact = 4096 - math.ceil(Fraction(3000 + 3 * 4 + 3) * Fraction(115, 100))
    get_client("ollama").chat(messages, max_tokens=exact)
    assert sent_options(served)["num_ctx"] == 4096
    served.reset()
    get_client("ollama").chat(messages, max_tokens=exact + 1)
    assert sent_options(served)["num_ctx"] == 8192


# --- the chat turn ----------------------------------------------------------------


@pytest.fixture
def chat_model(served, settings) -> FakeModelServer:
    settings.INFERENCE_BACKEND = "ollama"
    settings.CHAT_MODEL = "fake-chat"
    settings.OLLAMA_NUM_CTX_MAX = 4096
    return served


@pytest.mark.django_db
@pytest.mark.parametrize("accept", ["application/json", "text/event-stream"])
def test_a_chat_turn_too_large_for_the_window_is_a_clear_502(api_client, owner, chat_model, accept):
    session = ChatSessionFactory(owner=owner)
    response = api_client.post(
        f"/api/sessions/{session.uuid}/chat/",
        {"message": text_of(3500), "budget": 8000},
        format="json",
        HTTP_ACCEPT=accept,
    )
    assert response.status_code == 502
    raw = response.content.decode()
    # A stream answers its error as one event before anything else.
    if accept == "text/event-stream":
        event = json.loads(raw.removeprefix("data: "))
        detail, transient = event["error"], event["transient"]
    else:
        body = json.loads(raw)
        detail, transient = body["detail"], body["transient"]
    assert transient is False
    assert "tokens of context; OLLAMA_NUM_CTX_MAX is 4,096" in detail
    assert "nothing was stored" in detail
    assert chat_model.requests == []
    assert not Episode.objects.filter(session=session).exists()
