"""Inference clients: the utility call for summaries, and chat (plain or streamed).

Usage::

    from summaries.inference import get_client, InferenceError

    client = get_client()                  # settings.INFERENCE_BACKEND
    c = client.complete(prompt, model=settings.UTILITY_MODEL,
                        temperature=settings.SUMMARY_TEMPERATURE,
                        max_tokens=settings.SUMMARY_GEN_MAX_TOKENS)
    c.text, c.model, c.prompt_tokens, c.completion_tokens, c.duration_ms

    reply = client.chat(messages)          # messages: [{"role": ..., "content": ...}, ...]
    stream = client.chat_stream(messages)  # iterate for str chunks; then stream.completion
    client.health()                        # raises InferenceError if the backend does not answer

Every failure raises an ``InferenceError`` whose ``transient`` flag says
whether a retry may help (``TransientInferenceError``: timeouts, connection
errors, 429, 5xx) or not (``PermanentInferenceError``: other 4xx, malformed
payloads, empty content; ``ContextWindowExceeded`` when a prompt cannot fit
the largest window allowed, ``OLLAMA_NUM_CTX_MAX``). A ``Completion`` never
has empty text.

Backends (``INFERENCE_BACKEND``): ``ollama``, ``openai``, ``nexus`` and
``offline``, one module each. HTTP backends share one pooled httpx client per
process (``summaries.inference.http``) and read the URL, key and timeouts
from settings on every call.

Choosing the client: ``get_client()`` is the one way code finds its model
client, by the name in ``settings.INFERENCE_BACKEND``. Another client (a fake
in tests, a wrapper in a bench) is put in place by registering it under a
name of its own and pointing the setting at that name::

    register_backend("fake", lambda: fake)
    with override_settings(INFERENCE_BACKEND="fake"):
        ...                                 # every get_client() is now ``fake``
    unregister_backend("fake")
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from summaries.inference.base import (
    ChatStream,
    Completion,
    InferenceClient,
    InferenceError,
    Message,
    PermanentInferenceError,
    Sampling,
    TransientInferenceError,
)
from summaries.inference.context_window import ContextWindowExceeded
from summaries.inference.deadline import DeadlineExceeded, deadline_after, within
from summaries.inference.nexus import NexusServiceClient
from summaries.inference.offline import OfflineClient
from summaries.inference.ollama import OllamaClient
from summaries.inference.openai import OpenAIClient

__all__ = [
    "ChatStream",
    "Completion",
    "ContextWindowExceeded",
    "DeadlineExceeded",
    "InferenceClient",
    "InferenceError",
    "Message",
    "PermanentInferenceError",
    "Sampling",
    "TransientInferenceError",
    "deadline_after",
    "get_client",
    "register_backend",
    "unregister_backend",
    "within",
]

#: Backend name -> what builds its client (a client class, or any callable).
BACKENDS: dict[str, Callable[[], InferenceClient]] = {
    cls.name: cls for cls in (OllamaClient, OpenAIClient, NexusServiceClient, OfflineClient)
}
_BUILT_IN = frozenset(BACKENDS)

_clients: dict[str, InferenceClient] = {}
_clients_lock = threading.Lock()


def get_client(backend: str | None = None) -> InferenceClient:
    """The shared client for ``backend`` (default ``settings.INFERENCE_BACKEND``).

    Clients keep no per-call state and read their settings at call time, so
    one instance per backend name serves every thread.
    """
    name = (backend or settings.INFERENCE_BACKEND).strip().lower()
    client = _clients.get(name)
    if client is not None:
        return client
    with _clients_lock:
        client = _clients.get(name)
        if client is not None:
            return client
        try:
            build = BACKENDS[name]
        except KeyError:
            raise ImproperlyConfigured(
                f"Unknown inference backend {name!r}; choose one of: {', '.join(sorted(BACKENDS))}."
            ) from None
        return _clients.setdefault(name, build())


def register_backend(name: str, build: Callable[[], InferenceClient]) -> None:
    """Make ``name`` a backend whose client ``build()`` returns (built once, on
    first use); ``INFERENCE_BACKEND=name`` then selects it. The built-in
    backends cannot be replaced."""
    name = name.strip().lower()
    if name in _BUILT_IN:
        raise ValueError(f"{name!r} is a built-in inference backend")
    with _clients_lock:
        BACKENDS[name] = build
        _clients.pop(name, None)


def unregister_backend(name: str) -> None:
    """Forget a backend added with ``register_backend`` (and its client)."""
    name = name.strip().lower()
    if name in _BUILT_IN:
        raise ValueError(f"{name!r} is a built-in inference backend")
    with _clients_lock:
        BACKENDS.pop(name, None)
        _clients.pop(name, None)
