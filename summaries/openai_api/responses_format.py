"""OpenAI's Responses objects: the ``response`` and its stream's events.

A streamed response is, in order: ``response.created``,
``response.in_progress``, ``response.output_item.added``,
``response.content_part.added``, one ``response.output_text.delta`` per
chunk of text, ``response.output_text.done``, ``response.content_part.done``,
``response.output_item.done`` and ``response.completed``, each with the
next ``sequence_number``; an error after the first event ends it with an
``error`` event (the SDKs raise it).
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from summaries.inference import Completion
from summaries.openai_api.errors import OpenAIError
from summaries.openai_api.hints import SERVED_TIER
from summaries.openai_api.responses_request import ResponsesRequest


def usage(completion: Completion) -> dict[str, Any]:
    return {
        "input_tokens": completion.prompt_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": completion.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": completion.prompt_tokens + completion.completion_tokens,
    }


class ResponseWriter:
    """The objects and events of one response, sharing its id, time and message id
    (the ``TurnWriter`` of ``summaries.openai_api.views``)."""

    def __init__(self, call: ResponsesRequest, *, response_id: str) -> None:
        self.call = call
        self.id = response_id
        self.created_at = int(time.time())
        self.message_id = f"msg_{uuid.uuid4().hex}"
        self.sequence = 0
        self._closing: bytes | None = None

    def response(self, completion: Completion | None = None) -> dict[str, Any]:
        """The ``response`` object: in progress and empty without ``completion``, else completed."""
        done = completion is not None
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": "completed" if done else "in_progress",
            "background": False,
            "error": None,
            "incomplete_details": None,
            "model": self.call.chat.model,
            "output": [self.message(completion.text, "completed")] if done else [],
            "service_tier": SERVED_TIER,
            "tools": [],
            "usage": usage(completion) if done else None,
            **self.call.echo,
        }

    def answer(self, completion: Completion) -> dict[str, Any]:
        return self.response(completion)

    def message(self, text: str | None, status: str) -> dict[str, Any]:
        content = [] if text is None else [self.part(text)]
        return {
            "id": self.message_id,
            "type": "message",
            "status": status,
            "role": "assistant",
            "content": content,
        }

    @staticmethod
    def part(text: str) -> dict[str, Any]:
        return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}

    def event(self, kind: str, **fields: Any) -> bytes:
        payload = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return (
            f"event: {kind}\ndata: ".encode() + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"
        )

    def opening(self) -> bytes:
        """The events before the first chunk of text."""
        place = {"item_id": self.message_id, "output_index": 0, "content_index": 0}
        return (
            self.event("response.created", response=self.response())
            + self.event("response.in_progress", response=self.response())
            + self.event("response.output_item.added", output_index=0, item=self.message(None, "in_progress"))
            + self.event("response.content_part.added", **place, part=self.part(""))
        )

    def delta(self, text: str) -> bytes:
        return self.event(
            "response.output_text.delta",
            item_id=self.message_id,
            output_index=0,
            content_index=0,
            delta=text,
            logprobs=[],
        )

    def closing(self, completion: Completion) -> bytes:
        """The events after the last chunk of text; the same bytes however often asked (the
        answer kept for an idempotency key is these very events)."""
        if self._closing is None:
            place = {"item_id": self.message_id, "output_index": 0, "content_index": 0}
            self._closing = (
                self.event("response.output_text.done", **place, text=completion.text, logprobs=[])
                + self.event("response.content_part.done", **place, part=self.part(completion.text))
                + self.event(
                    "response.output_item.done",
                    output_index=0,
                    item=self.message(completion.text, "completed"),
                )
                + self.event("response.completed", response=self.response(completion))
            )
        return self._closing

    def error(self, error: OpenAIError) -> bytes:
        """Both shapes: OpenAI's ``error`` event, and the ``error`` object the SDKs raise on."""
        body = error.body()["error"]
        return self.event(
            "error", code=body["code"], message=body["message"], param=body["param"], error=body
        )
