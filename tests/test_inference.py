"""Inference clients against the fake model server: request bodies, replies,
streaming, token counts, and how every failure is sorted into transient or
permanent. No database needed."""

from __future__ import annotations

import json
import os
import pickle
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from django.core.exceptions import ImproperlyConfigured

from sessions_app.tokens import count_tokens
from summaries.extractive import REPLY_LEAD, USER_LEAD, extractive_summary
from summaries.inference import (
    Completion,
    InferenceError,
    PermanentInferenceError,
    TransientInferenceError,
    get_client,
    register_backend,
    unregister_backend,
)
from summaries.inference import http as inference_http
from summaries.inference.offline import OFFLINE_MARKER, OFFLINE_MODEL
from summaries.prompts import fresh_prompt, update_prompt
from tests.fake_model_server import (
    FakeModelProcess,
    FakeModelServer,
    closed_port_url,
    reply_chunks,
    reply_text,
)
from tests.test_summarization_policy import context_of

HTTP_BACKENDS = ("ollama", "openai", "nexus")
CHAT_BACKENDS = ("ollama", "openai")

EXCHANGES = [
    ("How do I reset my router? It keeps dropping.", "Hold the reset button for ten seconds. Then wait."),
    ("And the Wi-Fi password?", "It is printed on the label underneath. Change it after setup."),
    ("Thanks!", "You are welcome."),
]
PROMPT = fresh_prompt(context_of(EXCHANGES))
MESSAGES = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "Tell me about routers."},
]


@pytest.fixture
def served(fake_model: FakeModelServer, settings) -> FakeModelServer:
    """The fake server as the configured inference service, with short timeouts."""
    settings.INFERENCE_SERVICE_URL = fake_model.url
    settings.INFERENCE_API_KEY = ""
    settings.INFERENCE_TIMEOUT_SECONDS = 5.0
    settings.INFERENCE_CONNECT_TIMEOUT_SECONDS = 2.0
    return fake_model


@pytest.fixture
def mock_transport(monkeypatch) -> Iterator[Callable[[Callable[[httpx.Request], httpx.Response]], None]]:
    """Swap the shared client for one answering from a function, for reply
    shapes the fake server never sends."""

    def install(handler: Callable[[httpx.Request], httpx.Response]) -> None:
        monkeypatch.setattr(inference_http, "_client", httpx.Client(transport=httpx.MockTransport(handler)))
        monkeypatch.setattr(inference_http, "_client_pid", os.getpid())

    yield install
    inference_http.close_http_client()


def only_request(server: FakeModelServer) -> dict:
    (request,) = server.requests
    return request


# --- request bodies and replies ---------------------------------------------


def test_ollama_complete_sends_the_prompt_as_one_user_message(served):
    completion = get_client("ollama").complete(PROMPT, model="util-1", temperature=0.2, max_tokens=500)

    request = only_request(served)
    assert (request["method"], request["path"]) == ("POST", "/api/chat")
    assert request["body"] == {
        "model": "util-1",
        "messages": [{"role": "user", "content": PROMPT}],
        "stream": False,
        # num_ctx: a window that holds the whole prompt (tests/test_ollama_context_window.py).
        "options": {"num_ctx": 4096, "temperature": 0.2, "num_predict": 500},
    }
    assert completion.text == reply_text(PROMPT)
    assert "Summary of 3 exchanges" in completion.text
    assert completion.model == "util-1"
    # The fake server counts words; our own fallback would count tiktoken tokens.
    assert completion.prompt_tokens == len(PROMPT.split())
    assert completion.completion_tokens == len(completion.text.split())


def test_openai_complete_sends_temperature_and_max_tokens(served):
    completion = get_client("openai").complete(PROMPT, model="util-1", temperature=0.2, max_tokens=500)

    request = only_request(served)
    assert request["path"] == "/v1/chat/completions"
    assert request["body"] == {
        "model": "util-1",
        "messages": [{"role": "user", "content": PROMPT}],
        "temperature": 0.2,
        "max_tokens": 500,
    }
    assert "authorization" not in request["headers"]
    assert completion.text == reply_text(PROMPT)
    assert completion.prompt_tokens == len(PROMPT.split())
    assert completion.completion_tokens == len(completion.text.split())


def test_openai_sends_the_api_key_as_bearer_token(served, settings):
    settings.INFERENCE_API_KEY = "sk-test-123"
    get_client("openai").complete(PROMPT)
    assert only_request(served)["headers"]["authorization"] == "Bearer sk-test-123"


@pytest.mark.parametrize("written", ["", "/", "/v1", "/v1/"])
def test_openai_base_url_with_or_without_v1_reaches_v1_chat_completions(served, settings, written):
    # OpenAI-compatible servers document their base URL ending in /v1; the
    # server's root works as well, and neither becomes /v1/v1/...
    settings.INFERENCE_SERVICE_URL = served.url + written
    client = get_client("openai")
    assert client.complete(PROMPT).text == reply_text(PROMPT)
    assert "".join(client.chat_stream(MESSAGES)) == reply_text(MESSAGES[-1]["content"])
    client.health()
    assert [(r["method"], r["path"]) for r in served.requests] == [
        ("POST", "/v1/chat/completions"),
        ("POST", "/v1/chat/completions"),
        ("GET", "/v1/models"),
    ]


def test_nexus_complete_posts_user_temperature_and_max_tokens(served):
    completion = get_client("nexus").complete(PROMPT, model="util-1", temperature=0.2, max_tokens=500)

    request = only_request(served)
    assert (request["method"], request["path"]) == ("POST", "/utility/complete")
    assert request["body"] == {"user": PROMPT, "temperature": 0.2, "maxTokens": 500}
    assert completion.text == reply_text(PROMPT)
    # The service names no model and reports no usage: configured name, our own counts.
    assert completion.model == "util-1"
    assert completion.prompt_tokens == count_tokens(PROMPT)
    assert completion.completion_tokens == count_tokens(completion.text)


@pytest.mark.parametrize("field", ["content", "text", "completion"])
def test_nexus_accepts_the_reply_under_any_known_field(mock_transport, settings, field):
    settings.INFERENCE_SERVICE_URL = "http://nexus.test"
    mock_transport(lambda request: httpx.Response(200, json={field: "  A summary.\n"}))
    assert get_client("nexus").complete(PROMPT).text == "A summary."


def test_complete_defaults_come_from_the_summary_settings(served, settings):
    settings.UTILITY_MODEL = "tiny-utility"
    settings.SUMMARY_TEMPERATURE = 0.3
    settings.SUMMARY_GEN_MAX_TOKENS = 123
    get_client("ollama").complete(PROMPT)
    body = only_request(served)["body"]
    assert body["model"] == "tiny-utility"
    assert body["options"] == {"num_ctx": 4096, "temperature": 0.3, "num_predict": 123}


@pytest.mark.parametrize("backend", CHAT_BACKENDS)
def test_chat_sends_all_messages_and_leaves_unset_options_to_the_server(served, settings, backend):
    settings.CHAT_MODEL = "chatty-7b"
    completion = get_client(backend).chat(MESSAGES)

    body = only_request(served)["body"]
    assert body["model"] == "chatty-7b"
    assert body["messages"] == MESSAGES
    assert not {"temperature", "max_tokens"} & set(body)
    # Ollama is told only its context window; temperature and reply length stay its own.
    assert body.get("options") == ({"num_ctx": 4096} if backend == "ollama" else None)
    assert completion.text == reply_text("Tell me about routers.")
    assert completion.model == "chatty-7b"


def test_token_counts_fall_back_to_our_own_count(served):
    served.set_mode("ok", usage=False)
    completion = get_client("ollama").complete(PROMPT)
    assert completion.prompt_tokens == count_tokens(PROMPT)
    assert completion.completion_tokens == count_tokens(completion.text)


def test_duration_covers_the_servers_latency(served):
    served.set_mode("ok", latency=0.2)
    completion = get_client("ollama").complete(PROMPT)
    assert completion.duration_ms >= 200


def test_chat_rejects_messages_without_content():
    with pytest.raises(PermanentInferenceError):
        get_client("ollama").chat([{"role": "user"}])
    with pytest.raises(PermanentInferenceError):
        get_client("ollama").chat([])


def test_nexus_backend_refuses_chat_clearly(served):
    with pytest.raises(PermanentInferenceError, match="only offers /utility/complete"):
        get_client("nexus").chat(MESSAGES)
    with pytest.raises(PermanentInferenceError):
        get_client("nexus").chat_stream(MESSAGES)
    assert served.requests == []


# --- streaming ----------------------------------------------------------------


@pytest.mark.parametrize("backend", CHAT_BACKENDS)
def test_chat_stream_yields_the_reply_in_chunks(served, backend):
    stream = get_client(backend).chat_stream(MESSAGES, model="chatty-7b", temperature=0.7, max_tokens=64)
    chunks = list(stream)

    expected = reply_text("Tell me about routers.")
    assert chunks == reply_chunks(expected)
    assert len(chunks) > 1
    assert stream.completion == Completion(
        text=expected,
        model="chatty-7b",
        prompt_tokens=len("You are helpful. Tell me about routers.".split()),
        completion_tokens=len(expected.split()),
        duration_ms=stream.completion.duration_ms,
    )
    body = only_request(served)["body"]
    assert body["stream"] is True
    assert body["messages"] == MESSAGES
    if backend == "ollama":
        assert body["options"] == {"num_ctx": 4096, "temperature": 0.7, "num_predict": 64}
    else:
        assert (body["temperature"], body["max_tokens"]) == (0.7, 64)


@pytest.mark.parametrize("backend", CHAT_BACKENDS)
def test_stream_completion_counts_tokens_itself_without_usage(served, backend):
    served.set_mode("ok", usage=False)
    stream = get_client(backend).chat_stream(MESSAGES)
    text = "".join(stream)
    assert stream.completion is not None
    assert stream.completion.completion_tokens == count_tokens(text)
    assert stream.completion.prompt_tokens == count_tokens("You are helpful.") + count_tokens(
        "Tell me about routers."
    )


@pytest.mark.parametrize("backend", CHAT_BACKENDS)
@pytest.mark.parametrize(
    ("mode", "error"),
    [
        ("http_500", TransientInferenceError),
        ("http_429", TransientInferenceError),
        ("http_400", PermanentInferenceError),
        ("malformed_json", PermanentInferenceError),
        ("empty_content", PermanentInferenceError),
        ("disconnect", TransientInferenceError),
    ],
)
def test_chat_stream_failures_raise_before_anything_is_streamed(served, backend, mode, error):
    served.set_mode(mode)
    with pytest.raises(error):
        get_client(backend).chat_stream(MESSAGES)


@pytest.mark.parametrize("backend", CHAT_BACKENDS)
def test_chat_stream_times_out_as_transient(served, settings, backend):
    settings.INFERENCE_TIMEOUT_SECONDS = 0.3
    served.set_mode("slow", slow_seconds=5)
    with pytest.raises(TransientInferenceError, match="timed out"):
        get_client(backend).chat_stream(MESSAGES)


def test_ollama_error_line_mid_stream_is_transient(mock_transport, settings):
    settings.INFERENCE_SERVICE_URL = "http://ollama.test"
    lines = [
        {"message": {"content": "Hel"}, "done": False},
        {"error": "model runner has unexpectedly stopped"},
    ]
    body = "".join(json.dumps(line) + "\n" for line in lines)
    mock_transport(lambda request: httpx.Response(200, text=body))

    stream = get_client("ollama").chat_stream(MESSAGES)
    assert next(stream) == "Hel"
    with pytest.raises(TransientInferenceError, match="unexpectedly stopped"):
        next(stream)
    assert stream.completion is None


def test_openai_stream_ending_after_finish_reason_without_done_is_whole(mock_transport, settings):
    settings.INFERENCE_SERVICE_URL = "http://openai.test"
    event = {"choices": [{"index": 0, "delta": {"content": "Whole answer"}, "finish_reason": "stop"}]}
    mock_transport(lambda request: httpx.Response(200, text=f"data: {json.dumps(event)}\n\n"))
    stream = get_client("openai").chat_stream(MESSAGES)
    assert "".join(stream) == "Whole answer"
    assert stream.completion is not None and stream.completion.text == "Whole answer"


def test_openai_stream_ending_without_finish_reason_or_done_is_an_error(mock_transport, settings):
    # What arrived before the cut is not the reply (it used to be kept as one).
    settings.INFERENCE_SERVICE_URL = "http://openai.test"
    event = {"choices": [{"index": 0, "delta": {"content": "Partial answer"}}]}
    mock_transport(lambda request: httpx.Response(200, text=f"data: {json.dumps(event)}\n\n"))
    stream = get_client("openai").chat_stream(MESSAGES)
    with pytest.raises(TransientInferenceError, match="ended early"):
        "".join(stream)
    assert stream.completion is None


# --- failures -----------------------------------------------------------------


@pytest.mark.parametrize("backend", HTTP_BACKENDS)
@pytest.mark.parametrize(
    ("mode", "error", "status"),
    [
        ("http_500", TransientInferenceError, 500),
        ("http_429", TransientInferenceError, 429),
        ("http_400", PermanentInferenceError, 400),
        ("malformed_json", PermanentInferenceError, None),
        ("empty_content", PermanentInferenceError, None),
        ("disconnect", TransientInferenceError, None),
    ],
)
def test_failure_modes_are_sorted(served, backend, mode, error, status):
    served.set_mode(mode)
    with pytest.raises(error) as excinfo:
        get_client(backend).complete(PROMPT)
    assert excinfo.value.transient is (error is TransientInferenceError)
    assert excinfo.value.status_code == status
    assert excinfo.value.backend == backend


def test_rate_limit_is_transient(served):
    served.set_mode("http_429")
    with pytest.raises(TransientInferenceError) as excinfo:
        get_client("ollama").complete(PROMPT)
    assert excinfo.value.status_code == 429
    assert "429" in str(excinfo.value)


@pytest.mark.parametrize("backend", HTTP_BACKENDS)
def test_timeout_is_transient_and_read_from_settings(served, settings, backend):
    settings.INFERENCE_TIMEOUT_SECONDS = 0.3
    served.set_mode("slow", slow_seconds=5)
    with pytest.raises(TransientInferenceError, match="timed out"):
        get_client(backend).complete(PROMPT)


@pytest.mark.parametrize("backend", HTTP_BACKENDS)
def test_connection_refused_is_transient(settings, backend):
    settings.INFERENCE_SERVICE_URL = closed_port_url()
    with pytest.raises(TransientInferenceError, match="connection to"):
        get_client(backend).complete(PROMPT)


def test_stopped_server_refuses_even_pooled_connections_then_recovers(served):
    client = get_client("ollama")
    client.complete(PROMPT)  # leaves a keep-alive connection in the pool
    served.stop()
    with pytest.raises(TransientInferenceError):
        client.complete(PROMPT)
    served.restart()
    assert client.complete(PROMPT).text == reply_text(PROMPT)


@pytest.mark.parametrize("backend", HTTP_BACKENDS)
@pytest.mark.parametrize("url", ["http://[::1", "http://"])
def test_an_unusable_service_url_is_permanent(settings, backend, url):
    settings.INFERENCE_SERVICE_URL = url
    with pytest.raises(PermanentInferenceError):
        get_client(backend).complete(PROMPT)
    with pytest.raises(PermanentInferenceError):
        get_client(backend).health()


def test_error_messages_leave_credentials_out(settings):
    settings.INFERENCE_SERVICE_URL = closed_port_url().replace("http://", "http://user:s3cret@")
    with pytest.raises(TransientInferenceError) as excinfo:
        get_client("ollama").complete(PROMPT)
    assert "s3cret" not in str(excinfo.value)
    assert "/api/chat" in str(excinfo.value)


def test_scripted_failures_then_recovery(served):
    served.set_mode("ok", fail_next=2, fail_mode="http_500")
    client = get_client("openai")
    for _ in range(2):
        with pytest.raises(TransientInferenceError):
            client.complete(PROMPT)
    assert client.complete(PROMPT).text == reply_text(PROMPT)
    assert [r["mode"] for r in served.requests] == ["http_500", "http_500", "ok"]


@pytest.mark.parametrize(
    ("backend", "payload"),
    [
        ("ollama", [1, 2, 3]),
        ("ollama", {"message": "not an object"}),
        ("openai", {"choices": []}),
        ("openai", {"choices": [{"message": {"content": 42}}]}),
        ("nexus", {"result": "nothing we know"}),
    ],
)
def test_wrong_shaped_payloads_are_permanent(mock_transport, settings, backend, payload):
    settings.INFERENCE_SERVICE_URL = "http://model.test"
    mock_transport(lambda request: httpx.Response(200, json=payload))
    with pytest.raises(PermanentInferenceError, match="malformed"):
        get_client(backend).complete(PROMPT)


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (503, TransientInferenceError),
        (408, TransientInferenceError),
        (401, PermanentInferenceError),
        (404, PermanentInferenceError),
    ],
)
def test_status_codes_are_sorted(mock_transport, settings, status, error):
    settings.INFERENCE_SERVICE_URL = "http://model.test"
    mock_transport(lambda request: httpx.Response(status, text="nope"))
    with pytest.raises(error):
        get_client("openai").complete(PROMPT)


def test_errors_survive_pickling_with_their_details():
    """Celery's prefork pool pickles a failed task's exception to the parent."""
    error = TransientInferenceError("HTTP 429", backend="openai", status_code=429)
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is TransientInferenceError
    assert (str(copy), copy.backend, copy.status_code, copy.transient) == (str(error), "openai", 429, True)


def test_every_inference_error_has_a_transient_flag():
    assert InferenceError("x").transient is False
    assert TransientInferenceError("x").transient is True
    assert PermanentInferenceError("x").transient is False
    assert issubclass(TransientInferenceError, InferenceError)
    assert issubclass(PermanentInferenceError, InferenceError)


# --- offline ------------------------------------------------------------------


def test_offline_fresh_summary_quotes_whole_sentences_of_both_sides(settings):
    completion = get_client("offline").complete(PROMPT)
    assert completion.text == extractive_summary(EXCHANGES, max_tokens=settings.SUMMARY_GEN_MAX_TOKENS)
    assert completion.text.splitlines() == [
        f"{USER_LEAD}How do I reset my router? And the Wi-Fi password?",
        f"{REPLY_LEAD}Hold the reset button for ten seconds. It is printed on the label underneath. "
        "You are welcome.",
    ]
    assert completion.model == OFFLINE_MODEL
    assert completion.prompt_tokens == count_tokens(PROMPT)
    assert completion.completion_tokens == count_tokens(completion.text)


def test_offline_update_keeps_the_previous_summary_and_adds_the_new_exchanges():
    previous = "The user asked about a router that keeps dropping."
    new = [("Is 5 GHz faster?", "Usually yes. It has a shorter range.")]
    completion = get_client("offline").complete(update_prompt(previous, context_of(new)))
    assert completion.text == f"{previous}\n{USER_LEAD}Is 5 GHz faster?\n{REPLY_LEAD}It has a shorter range."


@pytest.mark.parametrize(
    ("keep", "quoted"), [(90, "The router needs a firmware update."), (30, "Then a restart.")]
)
def test_offline_summarizes_a_single_episode_whose_start_was_cut(keep, quoted):
    """The summarizer cuts one over-long episode to its most recent text,
    losing the ``User:`` label (and, cut deeper, the ``Assistant:`` one); the
    sentence the cut went through is not quoted."""
    episode = context_of([("Q" * 50, "The router needs a firmware update. Then a restart. Done.")])
    completion = get_client("offline").complete(fresh_prompt(episode[-keep:]))
    assert completion.text == f"{REPLY_LEAD}{quoted}"


def test_offline_refuses_a_prompt_without_exchanges():
    with pytest.raises(PermanentInferenceError):
        get_client("offline").complete("Summarize nothing.")


def test_offline_chat_is_plainly_marked():
    client = get_client("offline")
    reply = client.chat(MESSAGES)
    assert reply.text.startswith(OFFLINE_MARKER)
    assert "No chat model is configured" in reply.text

    stream = client.chat_stream(MESSAGES)
    assert "".join(stream) == reply.text
    assert stream.completion is not None and stream.completion.text == reply.text
    client.health()


# --- health ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("backend", "path"), [("ollama", "/api/tags"), ("openai", "/v1/models"), ("nexus", "/health")]
)
def test_health_probes_the_backend(served, backend, path):
    get_client(backend).health()
    request = only_request(served)
    assert (request["method"], request["path"]) == ("GET", path)


@pytest.mark.parametrize("backend", HTTP_BACKENDS)
def test_health_raises_when_the_backend_fails(served, settings, backend):
    served.set_mode("http_500")
    with pytest.raises(TransientInferenceError):
        get_client(backend).health()
    settings.INFERENCE_SERVICE_URL = closed_port_url()
    with pytest.raises(TransientInferenceError):
        get_client(backend).health()


def test_health_times_out_with_the_short_timeout(served, settings):
    settings.INFERENCE_TIMEOUT_SECONDS = 60
    settings.INFERENCE_CONNECT_TIMEOUT_SECONDS = 0.3
    served.set_mode("slow", slow_seconds=5)
    with pytest.raises(TransientInferenceError, match="timed out"):
        get_client("ollama").health()


def test_nexus_health_accepts_a_service_without_a_health_route(mock_transport, settings):
    settings.INFERENCE_SERVICE_URL = "http://nexus.test"
    status = 404
    seen: list[tuple[str, str]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append((request.method, request.url.path))
        return httpx.Response(status)

    mock_transport(answer)
    get_client("nexus").health()  # 404: something is listening
    assert seen == [("GET", "/health")]
    status = 500
    with pytest.raises(TransientInferenceError):
        get_client("nexus").health()


# --- client selection and the shared HTTP client -----------------------------------


def test_get_client_is_cached_per_backend(settings):
    settings.INFERENCE_BACKEND = "openai"
    assert get_client() is get_client("openai")
    assert get_client("ollama") is get_client("ollama")
    assert get_client("ollama") is not get_client("openai")
    with pytest.raises(ImproperlyConfigured):
        get_client("gpt-in-a-box")


def test_a_registered_backend_is_chosen_by_the_setting(settings):
    fake = object()
    register_backend("Fake-Model", lambda: fake)
    try:
        settings.INFERENCE_BACKEND = "fake-model"
        assert get_client() is fake and get_client("fake-model") is fake
    finally:
        unregister_backend("fake-model")
    with pytest.raises(ImproperlyConfigured):
        get_client()
    with pytest.raises(ValueError):
        register_backend("ollama", lambda: fake)


def test_http_backends_share_one_pooled_client(served):
    get_client("ollama").complete(PROMPT)
    get_client("openai").complete(PROMPT)
    assert inference_http.get_http_client() is inference_http.get_http_client()
    ports = {r["client_port"] for r in served.requests}
    assert len(ports) == 1  # the second call reused the first call's connection


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_builds_its_own_client(served):
    client = get_client("ollama")
    client.complete(PROMPT)
    parent_http = inference_http.get_http_client()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: report and leave without running any pytest teardown
        status = 1
        try:
            fresh = inference_http.get_http_client() is not parent_http
            answered = client.complete(PROMPT).text == reply_text(PROMPT)
            os.write(write_end, json.dumps({"fresh": fresh, "answered": answered}).encode())
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    _, status = os.waitpid(pid, 0)
    with os.fdopen(read_end) as pipe:
        report = json.loads(pipe.read() or "{}")
    assert os.waitstatus_to_exitcode(status) == 0
    assert report == {"fresh": True, "answered": True}

    client.complete(PROMPT)
    parent_port, child_port, parent_again = (r["client_port"] for r in served.requests)
    assert child_port != parent_port  # the child opened its own connection
    assert parent_again == parent_port  # and left the parent's pooled one alone
    assert inference_http.get_http_client() is parent_http


def test_fake_server_as_a_separate_process_is_driven_over_http(settings):
    with FakeModelProcess() as server:
        settings.INFERENCE_SERVICE_URL = server.url
        server.set_mode("ok", fail_next=1, fail_mode="http_500")
        with pytest.raises(TransientInferenceError):
            get_client("nexus").complete(PROMPT)
        assert get_client("nexus").complete(PROMPT).text == reply_text(PROMPT)
        requests = server.wait_for_requests(2)
        assert [(r["path"], r["mode"]) for r in requests] == [("/utility/complete", "http_500")] + [
            ("/utility/complete", "ok")
        ]
        assert requests[1]["body"]["user"] == PROMPT
        server.reset()
        assert server.requests == []
        with pytest.raises(ValueError):
            server.set_mode("on_fire")

        url = server.url
        server.stop()
        with pytest.raises(TransientInferenceError, match="connection to"):
            get_client("nexus").complete(PROMPT)
        server.restart()
        assert server.url == url
        assert get_client("nexus").complete(PROMPT).text == reply_text(PROMPT)


def test_concurrent_calls_share_the_pool_and_are_all_recorded(served):
    prompts = [fresh_prompt(context_of([(f"Question {i}?", f"Answer {i}.")])) for i in range(24)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        texts = list(pool.map(lambda p: get_client("openai").complete(p).text, prompts))
    assert texts == [reply_text(p) for p in prompts]
    sent = sorted(r["body"]["messages"][0]["content"] for r in served.requests)
    assert sent == sorted(prompts)
    # Eight threads need at most eight connections: the rest were reused.
    assert len({r["client_port"] for r in served.requests}) <= 8
