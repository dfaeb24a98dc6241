"""OpenAI's response objects: ``chat.completion``, ``chat.completion.chunk``, ``model``."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from summaries.inference import Completion
from summaries.openai_api.errors import OpenAIError

#: ``owned_by`` of the listed model.
OWNER = "nexus"
SSE_DONE = b"data: [DONE]\n\n"


def completion_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex}"


def usage(completion: Completion) -> dict[str, int]:
    return {
        "prompt_tokens": completion.prompt_tokens,
        "completion_tokens": completion.completion_tokens,
        "total_tokens": completion.prompt_tokens + completion.completion_tokens,
    }


def completion_object(completion: Completion, *, model: str) -> dict[str, Any]:
    return {
        "id": completion_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": completion.text, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": usage(completion),
    }


class ChunkWriter:
    """A chat-completions turn's answer: the ``chat.completion`` object, or
    the ``chat.completion.chunk`` events of its stream, sharing id and time
    (the ``TurnWriter`` of ``summaries.openai_api.views``)."""

    def __init__(self, *, model: str, include_usage: bool = False) -> None:
        self.id = completion_id()
        self.created = int(time.time())
        self.model = model
        self.include_usage = include_usage

    def answer(self, completion: Completion) -> dict[str, Any]:
        return completion_object(completion, model=self.model)

    def opening(self) -> bytes:
        return self.chunk({"role": "assistant", "content": ""})

    def delta(self, text: str) -> bytes:
        return self.chunk({"content": text})

    def closing(self, completion: Completion) -> bytes:
        """The events after the last chunk of text: finish reason, usage, ``[DONE]``."""
        tail = self.chunk({}, finish_reason="stop")
        if self.include_usage:
            tail += self.usage(completion)
        return tail + SSE_DONE

    def error(self, error: OpenAIError) -> bytes:
        return self.event(error.body())

    def event(self, payload: dict[str, Any]) -> bytes:
        return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"

    def chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return self.event(self._base(choices=[choice]))

    def usage(self, completion: Completion) -> bytes:
        return self.event(self._base(choices=[], usage=usage(completion)))

    def _base(self, **fields: Any) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            **fields,
        }


def model_object(name: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": 0, "owned_by": OWNER}
