"""The Nexus inference service: ``POST {INFERENCE_SERVICE_URL}/utility/complete``.

The service chooses its utility model itself (its ``UTILITY_MODEL``) and
applies the chat template, so the request carries only the prompt as
``user`` with ``temperature`` and ``maxTokens``. The reply text is accepted
under ``content``, ``text`` or ``completion`` of the JSON object.

Chat is deliberately not offered here: the service is only known to expose
the utility endpoint, and sending chat to a guessed route would fail in a
confusing way later. ``chat``/``chat_stream`` raise ``PermanentInferenceError``
saying so; point ``INFERENCE_BACKEND`` at ``ollama`` or ``openai`` for chat.
"""

from __future__ import annotations

import json
from typing import Any

from summaries.inference.base import (
    ChatStream,
    Completion,
    PermanentInferenceError,
    Sampling,
    Stopwatch,
    reported_count,
    user_message,
)
from summaries.inference.http import HTTPX_ERRORS, HttpInferenceClient, get_http_client, health_timeout

TEXT_FIELDS = ("content", "text", "completion")


class NexusServiceClient(HttpInferenceClient):
    name = "nexus"

    def _complete(self, prompt: str, *, model: str, temperature: float, max_tokens: int) -> Completion:
        watch = Stopwatch()
        payload = self.post_json(
            "/utility/complete", {"user": prompt, "temperature": temperature, "maxTokens": max_tokens}
        )
        text = _reply_text(payload)
        if text is None:
            raise self.malformed(f"none of {', '.join(TEXT_FIELDS)} holds text", json.dumps(payload))
        usage = payload.get("usage")
        return self._finished(
            text=text,
            # The service does not say which model answered unless it adds
            # ``model``; the configured name is the best record we have.
            model=str(payload.get("model") or model),
            prompt_tokens=_either(
                reported_count(usage, "prompt_tokens"), reported_count(payload, "promptTokens")
            ),
            completion_tokens=_either(
                reported_count(usage, "completion_tokens"), reported_count(payload, "completionTokens")
            ),
            messages=user_message(prompt),
            watch=watch,
        )

    def _chat(
        self,
        messages: list[dict[str, str]],
        *,
        model: str,
        temperature: float | None,
        max_tokens: int | None,
        sampling: Sampling | None = None,
    ) -> Completion:
        raise self._no_chat()

    def _chat_stream(
        self,
        messages: list[dict[str, str]],
        *,
        model: str,
        temperature: float | None,
        max_tokens: int | None,
        sampling: Sampling | None = None,
    ) -> ChatStream:
        raise self._no_chat()

    def health(self) -> None:
        """``GET /health``; a service without that route still counts as up
        when it answers at all below 500 (a 404 means something is listening)."""
        url = self.url("/health")
        try:
            response = get_http_client().get(url, timeout=health_timeout())
        except HTTPX_ERRORS as exc:
            raise self.transport_error(exc, url) from exc
        if response.status_code == 404:
            return
        self.check_status(response)

    def _no_chat(self) -> PermanentInferenceError:
        return PermanentInferenceError(
            "the nexus inference service only offers /utility/complete; "
            "set INFERENCE_BACKEND to ollama or openai for chat",
            backend=self.name,
        )


def _reply_text(payload: dict[str, Any]) -> str | None:
    for field in TEXT_FIELDS:
        value = payload.get(field)
        if isinstance(value, str):
            return value
    return None


def _either(first: int | None, second: int | None) -> int | None:
    # Not ``or``: a reported 0 is a count, not a missing one.
    return first if first is not None else second
