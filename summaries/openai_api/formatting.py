"""OpenAI's response objects: ``chat.completion``, ``chat.completion.chunk``, ``model``."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from summaries.inference import Completion

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
    """The ``chat.completion.chunk`` events of one streamed reply, sharing id and time."""

    def __init__(self, *, model: str) -> None:
        self.id = completion_id()
        self.created = int(time.time())
        self.model = model

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
