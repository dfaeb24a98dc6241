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

import logging
from collections.abc import Iterator
from typing import Any

from django.http import HttpResponse, HttpResponseBase, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from nexus.api.renderers import JSONRenderer
from nexus.client_connection import ClientGone
from sessions_app.api.idempotency import KEY_PARAM, idempotent, store_hook
from sessions_app.api.serializers import EpisodeSerializer
from sessions_app.api.views import UUID_PARAM
from sessions_app.idempotency import Answer
from sessions_app.selectors import session_for_user
from summaries.api.context_serializers import (
    ChatErrorSerializer,
    ChatRequestSerializer,
    ChatTurnSerializer,
    ContextQuerySerializer,
    ContextSerializer,
)
from summaries.api.events import SSE_TYPE, EventStreamRenderer, sse_event
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

#: The status logged for a turn whose client left before its answer (nginx's 499).
CLIENT_CLOSED_REQUEST = 499
# The last event of a stream that broke for a reason of ours, not the model's.
STREAM_FAILED = "The reply could not be finished because of a server error. Please try again."


def chat_turn_payload(turn: ChatTurn) -> dict[str, Any]:
    return {
        "reply": turn.reply,
        "episode": EpisodeSerializer(turn.episode).data,
        "context": {
            "token_count": turn.context.token_count,
            "full_history_tokens": turn.context.full_history_tokens,
        },
    }


def json_answer(payload: dict[str, Any], code: int) -> Answer:
    return Answer(status=code, content_type="application/json", body=JSONRenderer().render(payload))


def done_event(turn: ChatTurn) -> bytes:
    """The last event of a streamed turn that was stored."""
    payload = chat_turn_payload(turn)
    return sse_event({"done": True, "episode": payload["episode"], "context": payload["context"]})


def chat_error_response(err: ChatTurnError) -> Response:
    if isinstance(err, ChatSessionGone):
        code = status.HTTP_404_NOT_FOUND
    elif err.timed_out:
        code = status.HTTP_504_GATEWAY_TIMEOUT
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
        responses={
            200: ContextSerializer,
            400: OpenApiResponse(
                description="Bad question, budget or asked_at, or a question the budget cannot hold."
            ),
        },
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
                asked_at=query.validated_data.get("asked_at"),
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
            "Nothing is stored when the model fails, takes longer than CHAT_TURN_TIMEOUT_SECONDS, "
            "or the client goes away before the answer is sent. With an `Idempotency-Key` header a "
            "retry gets the first answer back, without a second model call or episode."
        ),
        parameters=[UUID_PARAM, KEY_PARAM],
        request=ChatRequestSerializer,
        responses={
            (201, "application/json"): ChatTurnSerializer,
            (200, "text/event-stream"): OpenApiResponse(
                OpenApiTypes.STR, description="Server-sent events: text chunks, then done or error."
            ),
            400: OpenApiResponse(description="Missing, blank or too long message; bad budget or asked_at."),
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
            (504, "application/json"): OpenApiResponse(
                ChatErrorSerializer,
                description="The model did not finish within CHAT_TURN_TIMEOUT_SECONDS; nothing was stored.",
            ),
        },
    )
    @idempotent(model_call=True)
    def post(self, request: Request, uuid: str) -> HttpResponseBase:
        session = session_for_user(request.user, uuid, change=True)
        body = ChatRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        turn_args = {
            "caller": request.user,
            "session": session,
            "message": data["message"],
            "budget": data.get("budget"),
            "asked_at": data.get("asked_at"),
        }

        streamed = isinstance(request.accepted_renderer, EventStreamRenderer)
        # The events sent so far: with a key, a stream's whole body is kept with the episode.
        sent: list[bytes] = []

        def answer(turn: ChatTurn) -> Answer:
            if streamed:
                return Answer(200, SSE_TYPE, b"".join(sent) + done_event(turn))
            return json_answer(chat_turn_payload(turn), status.HTTP_201_CREATED)

        hook = store_hook(request, answer, session_pk=session.pk)
        try:
            if streamed:
                return self._stream(chat_turn_stream(**turn_args, before_commit=hook), sent)
            turn = chat_turn(**turn_args, before_commit=hook)
        except ContextTooLarge as err:
            # No prompt over budget is ever sent: the message alone does not fit.
            raise serializers.ValidationError({"message": [str(err)]}) from err
        except ChatTurnError as err:
            return chat_error_response(err)
        except ClientGone:
            return HttpResponse(status=CLIENT_CLOSED_REQUEST)  # nobody reads it
        return Response(chat_turn_payload(turn), status=status.HTTP_201_CREATED)

    def _stream(self, turn_stream: ChatTurnStream, sent: list[bytes]) -> Response | StreamingHttpResponse:
        # Wait for the first chunk before answering, so a model that is down
        # gets a real error status rather than a 200 with an error event.
        try:
            turn_stream.start()
        except ChatTurnError as err:
            return chat_error_response(err)
        response = StreamingHttpResponse(stream_events(turn_stream, sent), content_type=SSE_TYPE)
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"  # nginx: pass events through as they come
        return response


def stream_events(turn_stream: ChatTurnStream, sent: list[bytes] | None = None) -> Iterator[bytes]:
    """The SSE body of a streamed turn. If the client goes away, Django
    closes this generator and the turn is abandoned, storing nothing; if it
    went away unnoticed, the turn finds out before storing (``ClientGone``).

    The status line went out with the first chunk, so every way this can
    fail ends in an ``error`` event: a client never waits on a stream that
    just stops. ``sent`` collects the chunk events as they go out."""
    sent = [] if sent is None else sent
    try:
        for chunk in turn_stream:
            event = sse_event({"text": chunk})
            sent.append(event)
            yield event
        turn = turn_stream.turn
        assert turn is not None
        yield done_event(turn)
    except ClientGone:
        return
    except ChatTurnError as err:
        yield sse_event({"error": err.message, "transient": err.transient})
    except Exception:
        logger.exception("chat stream failed", extra={"session": str(turn_stream.session.uuid)})
        yield sse_event({"error": STREAM_FAILED, "transient": True})
    finally:
        turn_stream.close()
