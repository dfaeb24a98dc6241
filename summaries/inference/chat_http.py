"""The chat call as HTTP model servers take it: one POST, plain or streamed.

Ollama and OpenAI-compatible servers differ only in the route, the body, where
the reply text and token counts sit in the answer, and how a stream is framed;
the steps around those (timing, error checks, building the ``Completion``) are
written once here.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Iterator
from typing import Any, ClassVar

from summaries.inference.base import ChatStream, Completion, Sampling, Stopwatch
from summaries.inference.http import HttpInferenceClient


class ChatHttpClient(HttpInferenceClient):
    """Base of the backends that chat over HTTP."""

    #: The route of the chat call, below the base URL.
    chat_path: ClassVar[str]

    @abstractmethod
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
        """The JSON request body."""

    @abstractmethod
    def reply_text(self, payload: dict[str, Any]) -> str | None:
        """The text of a non-streamed answer (``None`` for null content);
        raises ``malformed`` when the answer has no place for it."""

    @abstractmethod
    def stream_chunks(self, lines: Iterator[str], seen: dict[str, Any]) -> Iterator[str]:
        """The text chunks in a streamed answer's lines. Puts ``model`` and the
        token counts, as far as the stream reports them, into ``seen`` in the
        shape ``token_counts`` reads."""

    @abstractmethod
    def token_counts(self, payload: dict[str, Any]) -> tuple[int | None, int | None]:
        """Prompt and completion tokens as the server reported them."""

    @abstractmethod
    def raise_reported_error(self, payload: dict[str, Any]) -> None:
        """Raise for an error the server sent inside a 200 answer."""

    def _chat(
        self,
        messages: list[dict[str, str]],
        *,
        model: str,
        temperature: float | None,
        max_tokens: int | None,
        sampling: Sampling | None = None,
    ) -> Completion:
        watch = Stopwatch()
        payload = self.post_json(
            self.chat_path,
            self.body(
                messages,
                model=model,
                temperature=temperature,
                max_tokens=max_tokens,
                stream=False,
                sampling=sampling,
            ),
        )
        self.raise_reported_error(payload)
        text = self.reply_text(payload)
        return self._reply(text, payload, model=model, messages=messages, watch=watch)

    def _chat_stream(
        self,
        messages: list[dict[str, str]],
        *,
        model: str,
        temperature: float | None,
        max_tokens: int | None,
        sampling: Sampling | None = None,
    ) -> ChatStream:
        watch = Stopwatch()
        seen: dict[str, Any] = {}
        body = self.body(
            messages,
            model=model,
            temperature=temperature,
            max_tokens=max_tokens,
            stream=True,
            sampling=sampling,
        )

        def chunks() -> Iterator[str]:
            with self.stream_lines(self.chat_path, body) as lines:
                yield from self.stream_chunks(lines, seen)

        def finish(text: str) -> Completion:
            return self._reply(text, seen, model=model, messages=messages, watch=watch)

        return ChatStream(chunks(), finish)

    def stream_event(self, data: str, what: str) -> dict[str, Any]:
        """One JSON object of a stream (``what`` names it in errors), checked
        for an error the server reported in it."""
        try:
            event = json.loads(data)
        except json.JSONDecodeError as exc:
            raise self.malformed(f"{what} is not JSON", data) from exc
        if not isinstance(event, dict):
            raise self.malformed(f"{what} is not an object", data)
        self.raise_reported_error(event)
        return event

    def _reply(
        self,
        text: str | None,
        payload: dict[str, Any],
        *,
        model: str,
        messages: list[dict[str, str]],
        watch: Stopwatch,
    ) -> Completion:
        prompt_tokens, completion_tokens = self.token_counts(payload)
        return self._finished(
            text=text,
            model=str(payload.get("model") or model),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            messages=messages,
            watch=watch,
        )
