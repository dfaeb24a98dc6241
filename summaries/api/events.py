"""Server-sent events of the chat endpoint: one ``data:`` line of JSON per event.

``EventStreamRenderer`` lets content negotiation accept ``text/event-stream``
and renders the answers that are not streamed (errors) as one event.
"""

from __future__ import annotations

import json
from typing import Any

from rest_framework.renderers import BaseRenderer

SSE_TYPE = "text/event-stream"


def sse_event(payload: Any) -> bytes:
    """One event: a ``data:`` line of compact JSON and a blank line. JSON
    never contains a raw newline, so one line always holds the whole event."""
    return b"data: " + json.dumps(payload, separators=(",", ":"), default=str).encode() + b"\n\n"


def error_text(data: Any) -> str:
    """A one-line message for an error body (``detail`` or field errors)."""
    if isinstance(data, dict):
        if "detail" in data:
            return str(data["detail"])
        parts = []
        for name, messages in data.items():
            first = messages[0] if isinstance(messages, list) and messages else messages
            parts.append(f"{name}: {first}")
        return "; ".join(parts) or "Request failed."
    if isinstance(data, list) and data:
        return str(data[0])
    return str(data)


class EventStreamRenderer(BaseRenderer):
    """``text/event-stream`` for the chat endpoint.

    Declared so content negotiation accepts the media type; a streamed turn
    returns a ``StreamingHttpResponse`` and bypasses rendering. Answers that
    are not streamed (validation errors, 404, a model that fails before the
    first chunk) come here and go out as a single event, errors as
    ``{"error": ...}`` with the field errors kept under ``errors``.
    """

    media_type = SSE_TYPE
    format = "sse"
    charset = "utf-8"

    def render(
        self, data: Any, accepted_media_type: str | None = None, renderer_context: dict | None = None
    ) -> bytes:
        if data is None:
            return b""
        response = (renderer_context or {}).get("response")
        if response is not None and response.status_code >= 400:
            payload: dict[str, Any] = {"error": error_text(data)}
            if isinstance(data, dict):
                if "transient" in data:
                    payload["transient"] = data["transient"]
                if "detail" not in data:
                    payload["errors"] = data  # field errors, by field name
            data = payload
        return sse_event(data)
