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

from django.conf import settings
from django.http import HttpResponse, HttpResponseBase, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from nexus.client_connection import ClientGone
from sessions_app.api.idempotency import KEY_PARAM, idempotent, store_hook
from sessions_app.api.serializers import EpisodeSerializer
from sessions_app.api.validators import text_field
from sessions_app.api.views import UUID_PARAM
from sessions_app.idempotency import Answer
from sessions_app.selectors import session_for_user
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
BUDGET_MIN = 1
BUDGET_MAX = 1_000_000
# The last event of a stream that broke for a reason of ours, not the model's.
STREAM_FAILED = "The reply could not be finished because of a server error. Please try again."


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
    recent = serializers.ListField(child=serializers.IntegerField(), help_text="Recent episodes (passages).")
    digest = serializers.ListField(
        child=serializers.IntegerField(), help_text="Episodes no summary covers yet, quoted by the digest."
    )
    positions = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="Episode id (of retrieved, recent and digest) -> its position in the session (#12).",
    )
    passages = serializers.DictField(
        child=serializers.ListField(child=serializers.ListField(child=serializers.IntegerField())),
        help_text="Episode id (retrieved, or the newest over its share) -> [start, end) in input+response.",
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
        message: str = body.validated_data["message"]
        budget: int | None = body.validated_data.get("budget")

        try:
            if isinstance(request.accepted_renderer, EventStreamRenderer):
                # The events sent so far: with a key, the whole body is kept with the episode.
                sent: list[bytes] = []
                hook = store_hook(
                    request,
                    lambda turn: Answer(200, SSE_TYPE, b"".join(sent) + done_event(turn)),
                    session_pk=session.pk,
                )
                turn_stream = chat_turn_stream(
                    caller=request.user, session=session, message=message, budget=budget, before_commit=hook
                )
                return self._stream(turn_stream, sent)
            hook = store_hook(
                request,
                lambda turn: json_answer(chat_turn_payload(turn), status.HTTP_201_CREATED),
                session_pk=session.pk,
            )
            turn = chat_turn(
                caller=request.user, session=session, message=message, budget=budget, before_commit=hook
            )
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
