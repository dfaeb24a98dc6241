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
payloads, empty content). A ``Completion`` never has empty text.

Backends (``INFERENCE_BACKEND``): ``ollama``, ``openai``, ``nexus`` and
``offline``, one module each. HTTP backends share one pooled httpx client per
process (``summaries.inference.http``) and read the URL, key and timeouts
from settings on every call.
"""

from __future__ import annotations

import threading

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from summaries.inference.base import (
    ChatStream,
    Completion,
    InferenceClient,
    InferenceError,
    Message,
    PermanentInferenceError,
    TransientInferenceError,
)
from summaries.inference.nexus import NexusServiceClient
from summaries.inference.offline import OfflineClient
from summaries.inference.ollama import OllamaClient
from summaries.inference.openai import OpenAIClient

__all__ = [
    "BACKENDS",
    "ChatStream",
    "Completion",
    "InferenceClient",
    "InferenceError",
    "Message",
    "PermanentInferenceError",
    "TransientInferenceError",
    "get_client",
]

BACKENDS: dict[str, type[InferenceClient]] = {
    cls.name: cls for cls in (OllamaClient, OpenAIClient, NexusServiceClient, OfflineClient)
}

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
    try:
        cls = BACKENDS[name]
    except KeyError:
        raise ImproperlyConfigured(
            f"Unknown inference backend {name!r}; choose one of: {', '.join(sorted(BACKENDS))}."
        ) from None
    with _clients_lock:
        return _clients.setdefault(name, cls())
