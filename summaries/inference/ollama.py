"""Ollama's native chat API: ``POST /api/chat``.

Ollama streams by default, so the non-streaming call says ``stream: false``
explicitly; a streamed reply is NDJSON, one JSON object per line, the last
with ``done: true`` and the token counts. Every call names its context window
(``options.num_ctx``, see ``summaries.inference.context_window``): Ollama's
default would silently cut a long prompt.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from summaries.inference.base import Sampling, TransientInferenceError, reported_count
from summaries.inference.chat_http import ChatHttpClient
from summaries.inference.context_window import num_ctx_for

#: The sampling parameters Ollama takes, as ``options`` of the same name.
OLLAMA_OPTIONS = frozenset({"top_p", "stop", "seed", "presence_penalty", "frequency_penalty"})


class OllamaClient(ChatHttpClient):
    name = "ollama"
    chat_path = "/api/chat"

    def body(
        self,
        messages: list[dict[str, str]],
        *,
        model: str,
        temperature: float | None,
        max_tokens: int | None,
        stream: bool,
        sampling: Sampling | None = None,
    ) -> dict[str, Any]:
        # Raises ContextWindowExceeded here, before any request is made.
        options: dict[str, Any] = {"num_ctx": num_ctx_for(messages, max_tokens, backend=self.name)}
        if temperature is not None:
            options["temperature"] = temperature
        if max_tokens is not None:
            options["num_predict"] = max_tokens
        for name, value in (sampling or {}).items():
            # Ollama takes these as options; it rejects ``user``, so that stays here.
            if name in OLLAMA_OPTIONS and value is not None:
                options[name] = value
        return {"model": model, "messages": messages, "stream": stream, "options": options}

    def reply_text(self, payload: dict[str, Any]) -> str | None:
        message = payload.get("message")
        if not isinstance(message, dict) or not isinstance(message.get("content"), (str, type(None))):
            raise self.malformed("no message.content", json.dumps(payload))
        return message.get("content")

    def stream_chunks(self, lines: Iterator[str], seen: dict[str, Any]) -> Iterator[str]:
        for line in lines:
            event = self.stream_event(line, "stream line")
            message = event.get("message")
            content = message.get("content") if isinstance(message, dict) else None
            if content:
                yield str(content)
            if event.get("done"):
                # The last object carries the model and the token counts.
                seen.update(event)
                return
        # The lines ended before the object with ``done``: the reply was cut.
        raise self.cut_short("no final object with done: true")

    def token_counts(self, payload: dict[str, Any]) -> tuple[int | None, int | None]:
        return reported_count(payload, "prompt_eval_count"), reported_count(payload, "eval_count")

    def health(self) -> None:
        self.get_ok("/api/tags")

    def raise_reported_error(self, payload: dict[str, Any]) -> None:
        # Ollama reports failures that happen after the 200 header (the
        # model runner crashing, running out of memory) as {"error": "..."}:
        # a server-side fault, so worth another try.
        if payload.get("error"):
            detail = str(payload["error"])[:200]
            raise TransientInferenceError(f"server reported: {detail}", backend=self.name)
