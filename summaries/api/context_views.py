"""The context and chat-turn endpoints.

``GET /api/sessions/{uuid}/context/`` shows the prompt the next reply would
get; ``POST /api/sessions/{uuid}/chat/`` runs one chat turn. With
``Accept: text/event-stream`` the turn streams as server-sent events::

    data: {"text": "..."}                      one per chunk of the reply
    data: {"done": true, "episode": {...}, "context": {...}}
    data: {"error": "...", "transient": true}  instead of "done" when the model fails

Views only parse, check access and call ``summaries.context`` /
``summaries.chat``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from sessions_app.api.serializers import EpisodeSerializer
from sessions_app.api.validators import text_field
from sessions_app.api.views import UUID_PARAM
from sessions_app.selectors import session_for_user
from summaries.chat import (
    ChatSessionGone,
    ChatTurn,
    ChatTurnError,
    ChatTurnStream,
    chat_turn,
    chat_turn_stream,
)
from summaries.context import ContextTooLarge, build_context

logger = logging.getLogger("nexus.chat")

BUDGET_MIN = 1
BUDGET_MAX = 1_000_000
# The last event of a stream that broke for a reason of ours, not the model's.
STREAM_FAILED = "The reply could not be finished because of a server error. Please try again."


# --- server-sent events -------------------------------------------------------


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

    media_type = "text/event-stream"
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


# --- serializers --------------------------------------------------------------


class ContextQuerySerializer(serializers.Serializer):
    question = serializers.CharField(
        required=False,
        default="",
        allow_blank=True,
        help_text="The question the next reply answers; empty shows the context alone.",
    )
    budget = serializers.IntegerField(
        required=False,
        min_value=BUDGET_MIN,
        max_value=BUDGET_MAX,
        help_text="Token budget: the oldest summaries, then the digest, are left out to fit it.",
    )

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        # Built per instance so the limit follows settings (and test overrides).
        fields["question"] = text_field(
            max_chars=settings.EPISODE_MAX_CHARS,
            allow_blank=True,
            required=False,
            default="",
            help_text=fields["question"].help_text,
        )
        return fields


class OmittedSerializer(serializers.Serializer):
    summaries = serializers.ListField(child=serializers.IntegerField(), help_text="Summary ids.")
    digest = serializers.ListField(child=serializers.IntegerField(), help_text="Episode ids.")
    retrieved = serializers.ListField(child=serializers.IntegerField(), help_text="Ranked ids that did not fit.")
    below_floor = serializers.ListField(child=serializers.IntegerField(), help_text="Ranked ids under the floor.")
    summaries_before_episode = serializers.IntegerField(
        allow_null=True,
        help_text="Set when the chain is longer than CONTEXT_MAX_SUMMARIES: the rows covering "
        "episodes before this id were left out without being read.",
    )


class ContextSerializer(serializers.Serializer):
    prompt = serializers.CharField()
    token_count = serializers.IntegerField(help_text="Tokens of the prompt (cl100k_base).")
    full_history_tokens = serializers.IntegerField(
        help_text="What the prompt would cost with every episode in full."
    )
    summaries = serializers.ListField(child=serializers.IntegerField(), help_text="Summary rows used.")
    retrieved = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="Older episodes quoted because they rank highest for the question (a long one by its passages).",
    )
    recent = serializers.ListField(child=serializers.IntegerField(), help_text="Episodes quoted in full.")
    digest = serializers.ListField(
        child=serializers.IntegerField(), help_text="Episodes no summary covers yet, quoted by the digest."
    )
    positions = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="Episode id (of retrieved, recent and digest) -> its position in the session (#12).",
    )
    passages = serializers.DictField(
        child=serializers.ListField(child=serializers.ListField(child=serializers.IntegerField())),
        help_text="Retrieved episode id -> [start, end) offsets into user_input + response of its quote.",
    )
    omitted = OmittedSerializer(help_text="What was left out: over the budget, or under the relevance floor.")
    budget = serializers.IntegerField(help_text="The budget applied (CONTEXT_DEFAULT_BUDGET when none was given).")
    within_budget = serializers.BooleanField()


class ChatRequestSerializer(serializers.Serializer):
    message = serializers.CharField()
    budget = serializers.IntegerField(
        required=False, min_value=BUDGET_MIN, max_value=BUDGET_MAX, help_text="Token budget for the context."
    )

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        # The message is stored as the episode's user_input: same limit, same checks.
        fields["message"] = text_field(max_chars=settings.EPISODE_MAX_CHARS)
        return fields

    def validate_message(self, value: str) -> str:
        if not value.strip():
            raise serializers.ValidationError("This field may not be blank.")
        return value


class ChatContextSerializer(serializers.Serializer):
    token_count = serializers.IntegerField()
    full_history_tokens = serializers.IntegerField()


class ChatTurnSerializer(serializers.Serializer):
    reply = serializers.CharField()
    episode = EpisodeSerializer()
    context = ChatContextSerializer()


class ChatErrorSerializer(serializers.Serializer):
    detail = serializers.CharField()
    transient = serializers.BooleanField()


def chat_turn_payload(turn: ChatTurn) -> dict[str, Any]:
    return {
        "reply": turn.reply,
        "episode": EpisodeSerializer(turn.episode).data,
        "context": {
            "token_count": turn.context.token_count,
            "full_history_tokens": turn.context.full_history_tokens,
        },
    }


def chat_error_response(err: ChatTurnError) -> Response:
    if isinstance(err, ChatSessionGone):
        code = status.HTTP_404_NOT_FOUND
    elif err.transient:
        code = status.HTTP_503_SERVICE_UNAVAILABLE
    else:
        code = status.HTTP_502_BAD_GATEWAY
    return Response({"detail": err.message, "transient": err.transient}, status=code)


# --- views --------------------------------------------------------------------


class SessionContextView(APIView):
    @extend_schema(
        tags=["context"],
        summary="The context the next reply would get (question, summaries, relevant earlier exchanges, recent details)",
        parameters=[UUID_PARAM, ContextQuerySerializer],
        responses={200: ContextSerializer, 400: OpenApiResponse(description="Bad question or budget, or a question the budget cannot hold.")},
    )
    def get(self, request: Request, uuid: str) -> Response:
        session = session_for_user(request.user, uuid)
        query = ContextQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        try:
            result = build_context(
                session=session,
                question=query.validated_data["question"],
                budget=query.validated_data.get("budget"),
            )
        except ContextTooLarge as err:
            raise serializers.ValidationError({"budget": [str(err)]}) from err
        return Response(result.as_dict())


class SessionChatView(APIView):
    renderer_classes = [JSONRenderer, EventStreamRenderer]

    @extend_schema(
        tags=["context"],
        summary="One chat turn: reply from the chat model, stored as an episode",
        description=(
            "Builds the context for `message`, asks the chat model and stores the exchange as an "
            "episode (which may trigger summarization). With `Accept: text/event-stream` the reply "
            'streams as `data: {"text": ...}` events and ends with `data: {"done": true, '
            '"episode": {...}}`, or `data: {"error": ...}` when the model fails. '
            "Nothing is stored when the model fails."
        ),
        parameters=[UUID_PARAM],
        request=ChatRequestSerializer,
        responses={
            (201, "application/json"): ChatTurnSerializer,
            (200, "text/event-stream"): OpenApiResponse(
                OpenApiTypes.STR, description="Server-sent events: text chunks, then done or error."
            ),
            400: OpenApiResponse(description="Missing, blank or too long message; bad budget."),
            404: OpenApiResponse(
                description="No such session (or not yours), or it was deleted during the turn."
            ),
            429: OpenApiResponse(
                description="The caller is at UTILITY_CALLS_PER_USER_HOUR (`Retry-After`); nothing was done."
            ),
            (502, "application/json"): OpenApiResponse(
                ChatErrorSerializer, description="The model answered with an error; nothing was stored."
            ),
            (503, "application/json"): OpenApiResponse(
                ChatErrorSerializer, description="The model is unreachable or busy; nothing was stored."
            ),
        },
    )
    def post(self, request: Request, uuid: str) -> Response | StreamingHttpResponse:
        session = session_for_user(request.user, uuid, change=True)
        body = ChatRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        message: str = body.validated_data["message"]
        budget: int | None = body.validated_data.get("budget")

        try:
            if isinstance(request.accepted_renderer, EventStreamRenderer):
                turn_stream = chat_turn_stream(
                    caller=request.user, session=session, message=message, budget=budget
                )
                return self._stream(turn_stream)
            turn = chat_turn(caller=request.user, session=session, message=message, budget=budget)
        except ContextTooLarge as err:
            # No prompt over budget is ever sent: the message alone does not fit.
            raise serializers.ValidationError({"message": [str(err)]}) from err
        except ChatTurnError as err:
            return chat_error_response(err)
        return Response(chat_turn_payload(turn), status=status.HTTP_201_CREATED)

    def _stream(self, turn_stream: ChatTurnStream) -> Response | StreamingHttpResponse:
        # Wait for the first chunk before answering, so a model that is down
        # gets a real error status rather than a 200 with an error event.
        try:
            turn_stream.start()
        except ChatTurnError as err:
            return chat_error_response(err)
        response = StreamingHttpResponse(stream_events(turn_stream), content_type="text/event-stream")
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"  # nginx: pass events through as they come
        return response


def stream_events(turn_stream: ChatTurnStream) -> Iterator[bytes]:
    """The SSE body of a streamed turn. If the client goes away, Django
    closes this generator and the turn is abandoned, storing nothing.

    The status line went out with the first chunk, so every way this can
    fail ends in an ``error`` event: a client never waits on a stream that
    just stops."""
    try:
        for chunk in turn_stream:
            yield sse_event({"text": chunk})
        turn = turn_stream.turn
        assert turn is not None
        payload = chat_turn_payload(turn)
        yield sse_event({"done": True, "episode": payload["episode"], "context": payload["context"]})
    except ChatTurnError as err:
        yield sse_event({"error": err.message, "transient": err.transient})
    except Exception:
        logger.exception("chat stream failed", extra={"session": str(turn_stream.session.uuid)})
        yield sse_event({"error": STREAM_FAILED, "transient": True})
    finally:
        turn_stream.close()
