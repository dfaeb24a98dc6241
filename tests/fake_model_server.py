"""A fake model server for tests: Ollama, OpenAI-compatible and nexus-service routes.

It binds 127.0.0.1 on a free port, answers deterministically, records every
request, and fails on demand. Standard library only, so it also runs as its
own process (Celery workers under test live in other processes, and the test
must still read what the server received).

Routes
    POST /api/chat               Ollama chat; ``stream`` absent or true -> NDJSON lines
    POST /v1/chat/completions    OpenAI chat; ``stream: true`` -> SSE ending with ``data: [DONE]``
    POST /utility/complete       nexus service: ``{"user", "temperature", "maxTokens"}`` -> ``{"content"}``
    GET  /api/tags, /v1/models, /health   health probes
    GET  /_control/requests      ``{"requests": [...]}`` (control routes are never recorded)
    POST /_control/mode          body = keyword arguments of ``set_mode``
    POST /_control/reset         forget requests, back to mode ``ok``

Answers
    The reply to a prompt (the last user message) is ``reply_text(prompt)``:
    ``"Summary of N exchanges [abcd1234]."`` where N counts lines starting with
    ``User: `` and the hash is of the prompt, so tests can tell replies apart
    and compute the expected text. Ollama and OpenAI answers report token
    counts (words, so they differ from the client's own tiktoken count);
    ``/utility/complete`` reports none.

Modes (``set_mode(mode, ...)``; each request takes the next scripted mode first)
    ok, http_500, http_429 (with ``Retry-After: 1``), http_400,
    slow (waits ``slow_seconds`` before answering: for client timeouts),
    malformed_json (200 with a body that is not JSON / a bad stream line),
    empty_content (a well-formed answer with empty text),
    disconnect (closes the connection without answering),
    cut_stream (a stream that ends cleanly after its first chunk, without its
    final message: no ``done: true``, no ``finish_reason``, no ``[DONE]``),
    trickle (a stream that sends each chunk ``trickle_seconds`` after the last).
    ``latency`` delays every answer; ``fail_next=3, fail_mode="http_500"``
    (or ``script=[...]``) makes the next requests fail and then recover;
    ``usage=False`` drops the token counts. ``answers=[...]`` gives the texts of
    the next answers, one per model request, in order (then ``reply_text`` again). ``set_mode`` replaces the whole
    behaviour, so pass everything you want each time.
    Connection refused: ``stop()`` the server (open keep-alive connections are
    cut too), later ``restart()`` on the same port; or use ``closed_port_url()``.

Records
    ``server.requests`` -> list of dicts: ``method``, ``path``, ``body`` (parsed
    JSON or None), ``headers`` (lower-case names), ``time`` (epoch seconds),
    ``client_port`` and ``mode`` (how it was answered).

In a test (fixtures from tests/conftest_fake_model.py, loaded by the root conftest)::

    def test_summary(fake_model, settings):
        settings.INFERENCE_SERVICE_URL = fake_model.url
        fake_model.set_mode("ok", fail_next=2, fail_mode="http_500")
        ...
        assert fake_model.requests[-1]["body"]["options"]["num_predict"] == 500

In another process (a Celery worker under test reaches it by its URL)::

    with FakeModelProcess() as server:          # or the ``fake_model_process`` fixture
        env["INFERENCE_SERVICE_URL"] = server.url
        server.set_mode("slow", slow_seconds=10)
        server.wait_for_requests(3)

From a shell: ``python tests/fake_model_server.py --port 0 --ready-file F``
writes its URL into F once it listens, and serves until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

MODES = (
    "ok",
    "http_500",
    "http_429",
    "http_400",
    "slow",
    "malformed_json",
    "empty_content",
    "disconnect",
    "cut_stream",
    "trickle",
)
FAKE_MODELS = ("fake-utility", "fake-chat")
MODEL_PATHS = ("/api/chat", "/v1/chat/completions", "/utility/complete")
_USER_LINE = re.compile(r"^User: ", re.M)


def reply_text(prompt: str) -> str:
    """The deterministic answer to ``prompt``."""
    exchanges = len(_USER_LINE.findall(prompt))
    digest = hashlib.sha256(prompt.encode()).hexdigest()[:8]
    return f"Summary of {exchanges} exchanges [{digest}]."


def reply_chunks(text: str) -> list[str]:
    """How a streamed answer is cut: word by word, joining back to ``text``."""
    words = text.split(" ")
    return [word if i == len(words) - 1 else f"{word} " for i, word in enumerate(words)]


def closed_port_url() -> str:
    """A URL on 127.0.0.1 where nothing listens (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@dataclass
class Behaviour:
    """How the server answers; see the module docstring."""

    mode: str = "ok"
    latency: float = 0.0
    slow_seconds: float = 30.0
    script: list[str] = field(default_factory=list)
    usage: bool = True
    trickle_seconds: float = 8.0
    answers: list[str] = field(default_factory=list)

    @classmethod
    def build(
        cls,
        mode: str = "ok",
        *,
        latency: float = 0.0,
        slow_seconds: float = 30.0,
        script: list[str] | tuple[str, ...] = (),
        fail_next: int = 0,
        fail_mode: str = "http_500",
        usage: bool = True,
        trickle_seconds: float = 8.0,
        answers: list[str] | tuple[str, ...] = (),
    ) -> Behaviour:
        steps = [fail_mode] * fail_next + list(script)
        for name in [mode, *steps]:
            if name not in MODES:
                raise ValueError(f"unknown mode {name!r}; choose from {', '.join(MODES)}")
        return cls(
            mode=mode,
            latency=float(latency),
            slow_seconds=float(slow_seconds),
            script=steps,
            usage=usage,
            trickle_seconds=float(trickle_seconds),
            answers=[str(answer) for answer in answers],
        )


class FakeModelState:
    """What all handler threads share: the behaviour and the request log."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.behaviour = Behaviour()
        self.requests: list[dict[str, Any]] = []
        # Set on stop/reset so handlers sleeping in "slow" wake up at once.
        self.wake = threading.Event()

    def set_behaviour(self, behaviour: Behaviour) -> None:
        with self.lock:
            self.behaviour = behaviour
            self.wake.set()
            self.wake = threading.Event()

    def reset(self) -> None:
        with self.lock:
            self.requests.clear()
        self.set_behaviour(Behaviour())

    def take(self, record: dict[str, Any]) -> tuple[str, Behaviour, threading.Event]:
        """Record a request and decide its mode (the next scripted one first)."""
        with self.lock:
            behaviour = self.behaviour
            mode = behaviour.script.pop(0) if behaviour.script else behaviour.mode
            record["mode"] = mode
            if behaviour.answers and record["path"] in MODEL_PATHS:
                record["answer"] = behaviour.answers.pop(0)
            self.requests.append(record)
            return mode, behaviour, self.wake

    def snapshot(self) -> list[dict[str, Any]]:
        with self.lock:
            return json.loads(json.dumps(self.requests))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # Many workers connecting at once must not overflow the default backlog of 5.
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], state: FakeModelState) -> None:
        self.state = state
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that time out or servers that stop mid-answer break pipes on
        # purpose here; a traceback per case would only bury real failures.
        return None

    def cut_connections(self) -> None:
        """Close keep-alive connections, so a stopped server really refuses."""
        with self.connections_lock:
            for conn in list(self.connections):
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self.connections.clear()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like a real model server
    timeout = 60  # idle keep-alive connections end eventually
    server: _Server

    def setup(self) -> None:
        super().setup()
        with self.server.connections_lock:
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        with self.server.connections_lock:
            self.server.connections.discard(self.connection)
        try:
            super().finish()
        except OSError:
            pass

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return None

    # --- plumbing ------------------------------------------------------------

    def _read_body(self) -> tuple[Any, str]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode("utf-8", "replace") if length else ""
        try:
            return (json.loads(raw) if raw else None), raw
        except json.JSONDecodeError:
            return None, raw

    def _send(self, status: int, body: bytes, content_type: str = "application/json", **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, payload: Any, **headers: str) -> None:
        self._send(status, json.dumps(payload).encode(), **headers)

    def _start_chunked(self, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _chunk(self, data: str) -> None:
        encoded = data.encode()
        self.wfile.write(f"{len(encoded):x}\r\n".encode() + encoded + b"\r\n")
        self.wfile.flush()

    def _end_chunked(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    # --- dispatch ------------------------------------------------------------

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_HEAD(self) -> None:
        self._dispatch("HEAD")

    def _dispatch(self, method: str) -> None:
        body, raw = self._read_body()
        path = self.path.split("?", 1)[0]
        if path.startswith("/_control/"):
            self._control(method, path, body)
            return
        record = {
            "method": method,
            "path": path,
            "body": body,
            "raw": raw if body is None and raw else None,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "time": time.time(),
            "client_port": self.client_address[1],
        }
        mode, behaviour, wake = self.server.state.take(record)
        self.wake = wake
        self.answer = record.get("answer")
        if behaviour.latency:
            wake.wait(behaviour.latency)
        if mode == "slow":
            wake.wait(behaviour.slow_seconds)
        if self._failed(mode):
            return
        routes = {
            ("POST", "/api/chat"): self._ollama_chat,
            ("POST", "/v1/chat/completions"): self._openai_chat,
            ("POST", "/utility/complete"): self._utility_complete,
            ("GET", "/api/tags"): lambda *_: self._json(200, {"models": [{"name": m} for m in FAKE_MODELS]}),
            ("GET", "/v1/models"): lambda *_: self._json(
                200, {"object": "list", "data": [{"id": m, "object": "model"} for m in FAKE_MODELS]}
            ),
            ("GET", "/health"): lambda *_: self._json(200, {"status": "ok"}),
            ("HEAD", "/"): lambda *_: self._send(200, b""),
        }
        handler = routes.get((method, path))
        if handler is None:
            self._json(404, {"error": f"no route {method} {path}"})
            return
        handler(body if isinstance(body, dict) else {}, mode, behaviour)

    def _reply(self, prompt: str) -> str:
        """The scripted answer of this request (``answers``), else ``reply_text``."""
        return self.answer if self.answer is not None else reply_text(prompt)

    def _failed(self, mode: str) -> bool:
        """Answer a failure mode that does not depend on the route."""
        if mode == "http_500":
            self._json(500, {"error": "fake server error"})
        elif mode == "http_429":
            self._json(429, {"error": "fake rate limit"}, Retry_After="1")
        elif mode == "http_400":
            self._json(400, {"error": "fake bad request"})
        elif mode == "disconnect":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        else:
            return False
        return True

    def _control(self, method: str, path: str, body: Any) -> None:
        state = self.server.state
        if method == "GET" and path == "/_control/requests":
            self._json(200, {"requests": state.snapshot()})
        elif method == "POST" and path == "/_control/mode":
            try:
                state.set_behaviour(Behaviour.build(**(body or {})))
            except (TypeError, ValueError) as exc:
                self._json(400, {"error": str(exc)})
                return
            self._json(200, asdict(state.behaviour))
        elif method == "POST" and path == "/_control/reset":
            state.reset()
            self._json(200, {"ok": True})
        else:
            self._json(404, {"error": f"no control route {method} {path}"})

    # --- model routes --------------------------------------------------------

    @staticmethod
    def _prompt(body: dict[str, Any]) -> tuple[str, str]:
        """The last user message (what the reply is about) and all text sent."""
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        users = [str(m.get("content", "")) for m in messages if m.get("role") == "user"]
        return (users[-1] if users else ""), " ".join(str(m.get("content", "")) for m in messages)

    def _ollama_chat(self, body: dict[str, Any], mode: str, behaviour: Behaviour) -> None:
        prompt, everything = self._prompt(body)
        text = "" if mode == "empty_content" else self._reply(prompt)
        model = str(body.get("model") or FAKE_MODELS[0])
        usage = {"prompt_eval_count": len(everything.split()), "eval_count": len(text.split())}
        usage = usage if behaviour.usage else {}
        if body.get("stream", True) is False:
            if mode == "malformed_json":
                self._send(200, b'{"message": {"content": "trunc')
                return
            payload = {"model": model, "message": {"role": "assistant", "content": text}, "done": True}
            self._json(200, {**payload, "done_reason": "stop", **usage})
            return
        self._start_chunked("application/x-ndjson")
        if mode == "malformed_json":
            self._chunk("this is not json\n")
        for piece in self._pieces(text, mode, behaviour):
            line = {"model": model, "message": {"role": "assistant", "content": piece}, "done": False}
            self._chunk(json.dumps(line) + "\n")
        if mode == "cut_stream":
            self._end_chunked()
            return
        final = {"model": model, "message": {"role": "assistant", "content": ""}, "done": True, **usage}
        self._chunk(json.dumps(final) + "\n")
        self._end_chunked()

    def _openai_chat(self, body: dict[str, Any], mode: str, behaviour: Behaviour) -> None:
        prompt, everything = self._prompt(body)
        text = "" if mode == "empty_content" else self._reply(prompt)
        model = str(body.get("model") or FAKE_MODELS[1])
        usage = {
            "prompt_tokens": len(everything.split()),
            "completion_tokens": len(text.split()),
            "total_tokens": len(everything.split()) + len(text.split()),
        }
        if not body.get("stream"):
            if mode == "malformed_json":
                self._send(200, b"<html>not json</html>")
                return
            choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            payload: dict[str, Any] = {"id": "chatcmpl-fake", "object": "chat.completion", "model": model}
            payload["choices"] = [choice]
            if behaviour.usage:
                payload["usage"] = usage
            self._json(200, payload)
            return
        self._start_chunked("text/event-stream")
        self._chunk(": fake stream\n\n")
        if mode == "malformed_json":
            self._chunk("data: {broken\n\n")
        base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": model}
        for piece in self._pieces(text, mode, behaviour):
            event = {**base, "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
            self._chunk(f"data: {json.dumps(event)}\n\n")
        if mode == "cut_stream":
            self._end_chunked()
            return
        last: dict[str, Any] = {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        if behaviour.usage:
            last["usage"] = usage
        self._chunk(f"data: {json.dumps(last)}\n\n")
        self._chunk("data: [DONE]\n\n")
        self._end_chunked()

    def _pieces(self, text: str, mode: str, behaviour: Behaviour) -> Any:
        """The chunks of a streamed reply: the first only when the stream is
        cut, each after ``trickle_seconds`` when it trickles."""
        pieces = reply_chunks(text) if text else []
        if mode == "cut_stream":
            pieces = pieces[:1]
        for piece in pieces:
            if mode == "trickle" and self.wake.wait(behaviour.trickle_seconds):
                return  # stop() or reset(): end now
            yield piece

    def _utility_complete(self, body: dict[str, Any], mode: str, behaviour: Behaviour) -> None:
        if mode == "malformed_json":
            self._send(200, b"Internal nonsense")
            return
        text = "" if mode == "empty_content" else self._reply(str(body.get("user", "")))
        self._json(200, {"content": text})


class FakeModelServer:
    """The server in a thread of this process; a context manager."""

    def __init__(self, port: int = 0) -> None:
        self.state = FakeModelState()
        self._requested_port = port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.port = port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeModelServer:
        self._server = _Server(("127.0.0.1", self.port), self.state)
        self.port = self._server.server_address[1]
        # A short poll interval keeps stop() (and so every test teardown) quick.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-model", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening and cut open connections: clients now get 'connection refused'."""
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        self._server.cut_connections()
        self.state.set_behaviour(self.state.behaviour)  # wakes handlers waiting in "slow"
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def restart(self) -> FakeModelServer:
        """Listen again on the same port, keeping the log and the behaviour."""
        self.stop()
        return self.start()

    def __enter__(self) -> FakeModelServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self.state.snapshot()

    def set_mode(self, mode: str = "ok", **options: Any) -> None:
        """Replace the behaviour (see the module docstring). Requests already
        waiting in ``slow`` or ``latency`` are released and answered at once."""
        self.state.set_behaviour(Behaviour.build(mode, **options))

    def reset(self) -> None:
        self.state.reset()

    def wait_for_requests(self, count: int, timeout: float = 30.0) -> list[dict[str, Any]]:
        return _wait_for(lambda: self.requests, count, timeout)


class FakeModelProcess:
    """The same server in a child process, driven over its control routes."""

    def __init__(self, port: int = 0) -> None:
        self.port = port
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 15.0) -> FakeModelProcess:
        with tempfile.TemporaryDirectory() as tmp:
            ready = Path(tmp) / "ready"
            script = str(Path(__file__).resolve())
            self._process = subprocess.Popen(
                [sys.executable, script, "--port", str(self.port), "--ready-file", str(ready)]
            )
            deadline = time.monotonic() + timeout
            while not ready.exists():
                if self._process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("fake model server process did not start")
                time.sleep(0.02)
            self.port = int(ready.read_text().rsplit(":", 1)[1])
        return self

    def stop(self) -> None:
        """End the process (connections refused from now on); ``restart()`` brings it back."""
        if self._process is None:
            return
        self._process.terminate()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._process = None

    def restart(self) -> FakeModelProcess:
        """A fresh process on the same port: the request log starts empty."""
        self.stop()
        return self.start()

    def __enter__(self) -> FakeModelProcess:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _call(self, method: str, path: str, payload: Any = None) -> Any:
        data = None if payload is None else json.dumps(payload).encode()
        request = urllib.request.Request(
            f"{self.url}{path}", data=data, method=method, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self._call("GET", "/_control/requests")["requests"]

    def set_mode(self, mode: str = "ok", **options: Any) -> None:
        Behaviour.build(mode, **options)  # fail here, not with a 400 from the other process
        self._call("POST", "/_control/mode", {"mode": mode, **options})

    def reset(self) -> None:
        self._call("POST", "/_control/reset", {})

    def wait_for_requests(self, count: int, timeout: float = 30.0) -> list[dict[str, Any]]:
        return _wait_for(lambda: self.requests, count, timeout)


def _wait_for(read: Any, count: int, timeout: float) -> list[dict[str, Any]]:
    """Poll until at least ``count`` requests arrived (workers call asynchronously)."""
    deadline = time.monotonic() + timeout
    while True:
        requests = read()
        if len(requests) >= count or time.monotonic() > deadline:
            return requests
        time.sleep(0.05)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Fake Ollama/OpenAI/nexus model server for tests.")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--ready-file", type=Path, help="written with the URL once listening")
    args = parser.parse_args(argv)

    server = FakeModelServer(port=args.port).start()
    if args.ready_file:
        # Written then renamed, so a reader never sees half a URL.
        partial = args.ready_file.with_suffix(".partial")
        partial.write_text(server.url)
        os.replace(partial, args.ready_file)
    else:
        print(server.url, flush=True)

    stopped = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopped.set())
    while not stopped.wait(0.5):
        pass
    server.stop()


if __name__ == "__main__":
    main()
