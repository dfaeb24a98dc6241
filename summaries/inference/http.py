"""The one pooled httpx client of this process, and how HTTP failures are sorted.

Every backend shares a single ``httpx.Client`` so connections to the model
server are reused across calls and threads. It is created on first use and
again in a forked child: Celery's prefork pool forks workers from a parent
that may already hold open connections, and two processes reading one socket
would interleave each other's responses.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import httpx
from django.conf import settings

from summaries.inference.base import (
    InferenceClient,
    InferenceError,
    PermanentInferenceError,
    TransientInferenceError,
)
from summaries.inference.deadline import DeadlineExceeded, check_deadline, deadline_passed, time_left

#: Status codes that mean "try again later" besides 5xx.
RETRYABLE_STATUS = frozenset({408, 425, 429})

#: What httpx raises for a failed call; ``InvalidURL`` is not an ``HTTPError``.
HTTPX_ERRORS = (httpx.HTTPError, httpx.InvalidURL)

#: How much of an error body goes into the message (it may end up in ``last_error``).
ERROR_BODY_EXCERPT = 200

_client: httpx.Client | None = None
_client_pid: int | None = None
_lock = threading.Lock()


def _forget_client_after_fork() -> None:
    # The child must not touch the parent's sockets, and a lock held by some
    # other thread at fork time would stay locked forever in the child.
    global _client, _client_pid, _lock
    _client = None
    _client_pid = None
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_client_after_fork)


def get_http_client() -> httpx.Client:
    """The shared client, built lazily and rebuilt in a forked process.

    The pid check backs up the fork hook for processes created some other way
    that still copy this module's state.
    """
    global _client, _client_pid
    pid = os.getpid()
    client = _client
    if client is not None and _client_pid == pid:
        return client
    with _lock:
        if _client is None or _client_pid != pid:
            # The old client (if any) belongs to the parent; dropping it
            # without close() leaves the parent's connections alone.
            _client = httpx.Client(
                timeout=request_timeout(),
                limits=httpx.Limits(max_connections=100, max_keepalive_connections=20),
                headers={"User-Agent": "nexus-inference/1"},
            )
            _client_pid = pid
        return _client


def close_http_client() -> None:
    """Close the pooled connections (process shutdown, or tests that want a clean slate)."""
    global _client, _client_pid
    with _lock:
        if _client is not None and _client_pid == os.getpid():
            _client.close()
        _client = None
        _client_pid = None


def request_timeout() -> httpx.Timeout:
    """Read from settings on every call so an override takes effect at once;
    no part of it longer than the time left before a chat turn's deadline."""
    read, connect = settings.INFERENCE_TIMEOUT_SECONDS, settings.INFERENCE_CONNECT_TIMEOUT_SECONDS
    left = time_left()
    if left is not None:
        read, connect = min(read, left), min(connect, left)
    return httpx.Timeout(read, connect=connect)


def health_timeout() -> httpx.Timeout:
    """Health checks must answer quickly: the connect timeout bounds the whole call."""
    seconds = settings.INFERENCE_CONNECT_TIMEOUT_SECONDS
    return httpx.Timeout(seconds, connect=seconds)


def shown_url(url: str | httpx.URL) -> str:
    """``url`` without credentials or query, fit for error messages and ``last_error``."""
    try:
        parsed = httpx.URL(str(url))
    except httpx.InvalidURL:
        return "<invalid URL>"
    port = f":{parsed.port}" if parsed.port else ""
    return f"{parsed.scheme}://{parsed.host}{port}{parsed.path}"


class HttpInferenceClient(InferenceClient):
    """Base of the backends that talk HTTP: URLs, headers and error sorting."""

    def __init__(self, base_url: str | None = None) -> None:
        # None means "settings.INFERENCE_SERVICE_URL at call time".
        self._base_url = base_url.rstrip("/") if base_url else None

    @property
    def base_url(self) -> str:
        return self._base_url or settings.INFERENCE_SERVICE_URL.rstrip("/")

    def url(self, path: str) -> str:
        return f"{self.base_url}{path}"

    def headers(self) -> dict[str, str]:
        return {}

    # --- error sorting -------------------------------------------------------

    def transport_error(self, exc: httpx.HTTPError | httpx.InvalidURL, url: str) -> InferenceError:
        """The ``InferenceError`` for an exception raised by httpx."""
        url = shown_url(url)
        if isinstance(exc, httpx.TimeoutException) and deadline_passed():
            return DeadlineExceeded(f"the chat turn ran past its deadline calling {url}", backend=self.name)
        if isinstance(exc, httpx.TimeoutException):
            return TransientInferenceError(
                f"timed out calling {url}: {type(exc).__name__}", backend=self.name
            )
        if isinstance(exc, (httpx.UnsupportedProtocol, httpx.LocalProtocolError, httpx.InvalidURL)):
            # Our request or URL is wrong; repeating it cannot help.
            return PermanentInferenceError(f"cannot call {url}: {exc}", backend=self.name)
        if isinstance(exc, httpx.TransportError):
            return TransientInferenceError(
                f"connection to {url} failed: {type(exc).__name__}: {exc}", backend=self.name
            )
        return PermanentInferenceError(f"calling {url} failed: {exc}", backend=self.name)

    def check_status(self, response: httpx.Response) -> None:
        """Raise for a non-2xx answer; the body must already be read."""
        status = response.status_code
        if 200 <= status < 300:
            return
        excerpt = response.text[:ERROR_BODY_EXCERPT].strip()
        message = f"{response.request.method} {shown_url(response.request.url)} answered HTTP {status}"
        if excerpt:
            message = f"{message}: {excerpt}"
        if status >= 500 or status in RETRYABLE_STATUS:
            raise TransientInferenceError(message, backend=self.name, status_code=status)
        raise PermanentInferenceError(message, backend=self.name, status_code=status)

    def cut_short(self, missing: str) -> TransientInferenceError:
        """A streamed reply that ended before its final message: an error, never
        a complete reply (another try may well get the whole of it)."""
        return TransientInferenceError(f"the stream ended early, {missing}", backend=self.name)

    def malformed(self, what: str, detail: str = "") -> PermanentInferenceError:
        suffix = f": {detail[:ERROR_BODY_EXCERPT]}" if detail else ""
        return PermanentInferenceError(f"malformed response, {what}{suffix}", backend=self.name)

    # --- requests ------------------------------------------------------------

    def post_json(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """POST ``body`` and return the JSON object answered."""
        url = self.url(path)
        check_deadline(self.name)
        try:
            response = get_http_client().post(
                url, json=body, headers=self.headers(), timeout=request_timeout()
            )
        except HTTPX_ERRORS as exc:
            raise self.transport_error(exc, url) from exc
        self.check_status(response)
        try:
            payload = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise self.malformed("body is not JSON", response.text) from exc
        if not isinstance(payload, dict):
            raise self.malformed("expected a JSON object", response.text)
        return payload

    @contextmanager
    def stream_lines(self, path: str, body: Mapping[str, Any]) -> Iterator[Iterator[str]]:
        """POST ``body`` and yield an iterator over the response's text lines.

        Status errors are raised before the first line; transport errors
        while reading are sorted the same way as for plain requests.
        """
        url = self.url(path)
        client = get_http_client()
        check_deadline(self.name)
        try:
            with client.stream(
                "POST", url, json=body, headers=self.headers(), timeout=request_timeout()
            ) as response:
                if not 200 <= response.status_code < 300:
                    response.read()
                    self.check_status(response)
                yield self._lines(response, url)
        except HTTPX_ERRORS as exc:
            raise self.transport_error(exc, url) from exc

    def _lines(self, response: httpx.Response, url: str) -> Iterator[str]:
        try:
            for line in response.iter_lines():
                # Each read waits at most the time that was left when the
                # request began; the deadline itself is checked line by line.
                check_deadline(self.name)
                if line.strip():
                    yield line
        except HTTPX_ERRORS as exc:
            raise self.transport_error(exc, url) from exc

    def get_ok(self, path: str) -> httpx.Response:
        """A short health request that raises unless the server answers 2xx."""
        url = self.url(path)
        try:
            response = get_http_client().get(url, headers=self.headers(), timeout=health_timeout())
        except HTTPX_ERRORS as exc:
            raise self.transport_error(exc, url) from exc
        self.check_status(response)
        return response
