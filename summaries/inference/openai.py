"""Any OpenAI-compatible server: ``POST /v1/chat/completions``.

Works with vLLM, llama.cpp's server, LM Studio and OpenAI itself. A streamed
reply is Server-Sent Events: ``data: {json}`` lines, ended by ``data: [DONE]``.

``INFERENCE_SERVICE_URL`` may be the server's root (``http://host:8000``) or
its base URL as these servers document it, ending in ``/v1``
(``https://api.openai.com/v1``); both reach ``/v1/chat/completions``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from django.conf import settings

from summaries.inference.base import (
    PermanentInferenceError,
    Sampling,
    TransientInferenceError,
    reported_count,
)
from summaries.inference.chat_http import ChatHttpClient

SSE_DATA = "data:"
SSE_DONE = "[DONE]"
API_VERSION_PATH = "/v1"


class OpenAIClient(ChatHttpClient):
    name = "openai"
    chat_path = "/chat/completions"

    @property
    def base_url(self) -> str:
        """The API's base URL, ending in ``/v1`` whichever way it was written."""
        root = super().base_url
        return root if root.endswith(API_VERSION_PATH) else f"{root}{API_VERSION_PATH}"

    def headers(self) -> dict[str, str]:
        key = settings.INFERENCE_API_KEY
        return {"Authorization": f"Bearer {key}"} if key else {}

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
        body: dict[str, Any] = {"model": model, "messages": messages}
        body.update({name: value for name, value in (sampling or {}).items() if value is not None})
        if temperature is not None:
            body["temperature"] = temperature
        if max_tokens is not None:
            # ``max_tokens`` rather than OpenAI's newer ``max_completion_tokens``:
            # the local servers this mostly talks to only know the former.
            body["max_tokens"] = max_tokens
        if stream:
            body["stream"] = True
        return body

    def reply_text(self, payload: dict[str, Any]) -> str | None:
        choice = _first_choice(payload)
        message = choice.get("message") if choice is not None else None
        if not isinstance(message, dict) or not isinstance(message.get("content"), (str, type(None))):
            raise self.malformed("no choices[0].message.content", json.dumps(payload))
        return message.get("content")

    def stream_chunks(self, lines: Iterator[str], seen: dict[str, Any]) -> Iterator[str]:
        finished = False
        for line in lines:
            # Comments (":"), "event:" and "id:" lines carry nothing we use.
            if not line.startswith(SSE_DATA):
                continue
            data = line[len(SSE_DATA) :].strip()
            if data == SSE_DONE:
                return
            event = self.stream_event(data, "SSE data")
            if event.get("model"):
                seen["model"] = event["model"]
            if isinstance(event.get("usage"), dict):
                seen["usage"] = event["usage"]
            choice = _first_choice(event)
            delta = choice.get("delta") if choice is not None else None
            content = delta.get("content") if isinstance(delta, dict) else None
            if content:
                yield str(content)
            if choice is not None and choice.get("finish_reason"):
                finished = True
        # Some servers close without [DONE] after a finish_reason: the reply is
        # whole. A stream that stops before either was cut (the model server
        # died, a proxy timed out): what arrived is not the reply.
        if not finished:
            raise self.cut_short("neither a finish_reason nor [DONE]")

    def token_counts(self, payload: dict[str, Any]) -> tuple[int | None, int | None]:
        usage = payload.get("usage")
        return reported_count(usage, "prompt_tokens"), reported_count(usage, "completion_tokens")

    def health(self) -> None:
        self.get_ok("/models")

    def raise_reported_error(self, payload: dict[str, Any]) -> None:
        # Errors sent with a 200 (mid-stream, or by lenient servers) come as
        # {"error": {"message": ..., "code": ...}}. A server-side code is
        # worth retrying; anything else describes a bad request.
        error = payload.get("error")
        if not error:
            return
        detail = error.get("message") if isinstance(error, dict) else error
        code = error.get("code") if isinstance(error, dict) else None
        message = f"server reported: {str(detail)[:200]}"
        if isinstance(code, int) and (code >= 500 or code == 429):
            raise TransientInferenceError(message, backend=self.name, status_code=code)
        raise PermanentInferenceError(message, backend=self.name)


def _first_choice(payload: dict[str, Any]) -> dict[str, Any] | None:
    choices = payload.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return choices[0]
    return None
