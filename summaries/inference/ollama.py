"""Ollama's native chat API: ``POST /api/chat``.

Ollama streams by default, so the non-streaming call says ``stream: false``
explicitly; a streamed reply is NDJSON, one JSON object per line, the last
with ``done: true`` and the token counts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from summaries.inference.base import (
    ChatStream,
    Completion,
    Stopwatch,
    TransientInferenceError,
    reported_count,
)
from summaries.inference.http import HttpInferenceClient


class OllamaClient(HttpInferenceClient):
    name = "ollama"

    def body(
        self,
        messages: list[dict[str, str]],
        *,
        model: str,
        temperature: float | None,
        max_tokens: int | None,
        stream: bool,
    ) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if temperature is not None:
            options["temperature"] = temperature
        if max_tokens is not None:
            options["num_predict"] = max_tokens
        body: dict[str, Any] = {"model": model, "messages": messages, "stream": stream}
        if options:
            body["options"] = options
        return body

    def _chat(
        self, messages: list[dict[str, str]], *, model: str, temperature: float | None, max_tokens: int | None
    ) -> Completion:
        watch = Stopwatch()
        payload = self.post_json(
            "/api/chat",
            self.body(messages, model=model, temperature=temperature, max_tokens=max_tokens, stream=False),
        )
        self._raise_reported_error(payload)
        message = payload.get("message")
        if not isinstance(message, dict) or not isinstance(message.get("content"), (str, type(None))):
            raise self.malformed("no message.content", json.dumps(payload))
        return self._finished(
            text=message.get("content"),
            model=str(payload.get("model") or model),
            prompt_tokens=reported_count(payload, "prompt_eval_count"),
            completion_tokens=reported_count(payload, "eval_count"),
            messages=messages,
            watch=watch,
        )

    def _chat_stream(
        self, messages: list[dict[str, str]], *, model: str, temperature: float | None, max_tokens: int | None
    ) -> ChatStream:
        watch = Stopwatch()
        final: dict[str, Any] = {}
        body = self.body(messages, model=model, temperature=temperature, max_tokens=max_tokens, stream=True)

        def chunks() -> Iterator[str]:
            with self.stream_lines("/api/chat", body) as lines:
                for line in lines:
                    try:
                        event = json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise self.malformed("stream line is not JSON", line) from exc
                    if not isinstance(event, dict):
                        raise self.malformed("stream line is not an object", line)
                    self._raise_reported_error(event)
                    message = event.get("message")
                    content = message.get("content") if isinstance(message, dict) else None
                    if content:
                        yield str(content)
                    if event.get("done"):
                        final.update(event)
                        return

        def finish(text: str) -> Completion:
            return self._finished(
                text=text,
                model=str(final.get("model") or model),
                prompt_tokens=reported_count(final, "prompt_eval_count"),
                completion_tokens=reported_count(final, "eval_count"),
                messages=messages,
                watch=watch,
            )

        return ChatStream(chunks(), finish)

    def health(self) -> None:
        self.get_ok("/api/tags")

    def _raise_reported_error(self, payload: dict[str, Any]) -> None:
        # Ollama reports failures that happen after the 200 header (the
        # model runner crashing, running out of memory) as {"error": "..."}:
        # a server-side fault, so worth another try.
        if payload.get("error"):
            detail = str(payload["error"])[:200]
            raise TransientInferenceError(f"server reported: {detail}", backend=self.name)
