"""``/v1/chat/completions`` and ``/v1/models``: parse, resolve, call the turn services.

Every error answers in OpenAI's shape (``summaries.openai_api.errors``);
every answer that knows its session names it in ``X-Nexus-Session``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpResponse, HttpResponseBase, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from nexus.api.authentication import CachedTokenAuthentication
from nexus.api.renderers import JSONRenderer
from nexus.client_connection import ClientGone
from nexus.errors import LimitReached
from nexus.failures import database_failure
from sessions_app.api.idempotency import KEY_PARAM, idempotent, store_hook
from sessions_app.errors import EndUserNotAllowed, SessionNotFound
from sessions_app.idempotency import Answer
from summaries.chat_record import MODEL_UNAVAILABLE, turn_timed_out
from summaries.context import ContextTooLarge
from summaries.inference import Completion, ContextWindowExceeded, DeadlineExceeded, InferenceError
from summaries.model_cap import check_model_call_allowed
from summaries.openai_api.begin import turn_begin
from summaries.openai_api.errors import INVALID_REQUEST, SERVER_ERROR, OpenAIError
from summaries.openai_api.formatting import ChunkWriter, model_object
from summaries.openai_api.request import ChatRequest, parse_request
from summaries.openai_api.turn import FinishedTurn, PreparedTurn, TurnStream, turn_answer

logger = logging.getLogger("nexus.chat")

SESSION_HEADER = "X-Nexus-Session"
#: The status logged for a turn whose client left before its answer (nginx's 499).
CLIENT_CLOSED_REQUEST = 499


class AnyAcceptNegotiation(DefaultContentNegotiation):
    """JSON whatever the client accepts: a stream is not rendered, and SDKs
    send ``Accept`` headers DRF would otherwise refuse."""

    def select_renderer(self, request: Request, renderers: list, format_suffix: str | None = None) -> tuple:
        return renderers[0], renderers[0].media_type


def model_error(err: InferenceError) -> OpenAIError:
    if isinstance(err, DeadlineExceeded):
        return OpenAIError(
            turn_timed_out(),
            status=504,
            code="timeout",
            type=SERVER_ERROR,
        )
    if err.transient:
        return OpenAIError(
            MODEL_UNAVAILABLE,
            status=503,
            code="model_unavailable",
            type=SERVER_ERROR,
        )
    return OpenAIError(
        "The chat model could not answer this request; nothing was stored.",
        status=502,
        code="model_error",
        type=SERVER_ERROR,
    )


def require_chat_backend() -> None:
    if settings.INFERENCE_BACKEND.strip().lower() == "nexus":
        raise OpenAIError(
            "The configured inference backend (nexus) has no chat.",
            status=503,
            code="chat_backend_unavailable",
            type=SERVER_ERROR,
        )


def as_openai_error(exc: Exception, request: Any = None) -> OpenAIError:
    if isinstance(exc, OpenAIError):
        return exc
    if isinstance(exc, (exceptions.NotAuthenticated, exceptions.AuthenticationFailed)):
        return OpenAIError(
            "Incorrect or missing API key: send 'Authorization: Bearer <Nexus API key or token>'.",
            status=401,
            code="invalid_api_key",
        )
    if isinstance(exc, exceptions.Throttled):
        return OpenAIError(str(exc.detail), status=429, code="rate_limit_exceeded", type="requests")
    if isinstance(exc, LimitReached):
        # The model-call cap: a 429, so the SDKs raise RateLimitError (and,
        # with a Retry-After over their two-minute limit, do not retry).
        return OpenAIError(exc.message, status=429, code="model_call_limit_reached", type="requests")
    if isinstance(exc, EndUserNotAllowed):
        return OpenAIError(exc.messages[0], param="user", code="invalid_value")
    if isinstance(exc, SessionNotFound):
        return OpenAIError("No such session.", status=404, param=SESSION_HEADER, code="session_not_found")
    if isinstance(exc, ContextTooLarge):
        return OpenAIError(str(exc), param="messages", code="context_length_exceeded")
    if isinstance(exc, ContextWindowExceeded):
        # The caller's prompt and reply cap, not the model, are at fault: a 400 as OpenAI answers it.
        param = "max_tokens" if exc.reply_tokens is not None else "messages"
        return OpenAIError(exc.message, param=param, code="context_length_exceeded")
    if isinstance(exc, RequestDataTooBig):
        return OpenAIError(
            f"The request body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes "
            "(DJANGO_DATA_UPLOAD_MAX_BYTES).",
            status=413,
            code="payload_too_large",
        )
    if isinstance(exc, InferenceError):
        return model_error(exc)
    if (failure := database_failure(exc, request)) is not None:
        logger.warning("chat completion failed: %s (%s: %s)", failure.log.lower(), type(exc).__name__, exc)
        return OpenAIError(failure.detail, status=503, code=failure.code, type=SERVER_ERROR)
    if isinstance(exc, exceptions.APIException):
        return OpenAIError(
            str(exc.detail), status=exc.status_code, code=exc.default_code, type=INVALID_REQUEST
        )
    logger.exception("chat completion failed")
    return OpenAIError("The server had an error while processing the request.", status=500, type=SERVER_ERROR)


class OpenAIView(APIView):
    authentication_classes = (CachedTokenAuthentication,)
    renderer_classes = (JSONRenderer,)
    content_negotiation_class = AnyAcceptNegotiation
    session_uuid: str | None = None

    def handle_exception(self, exc: Exception) -> Response:
        error = as_openai_error(exc, self.request)
        response = Response(error.body(), status=error.status)
        if error.status == 401:
            response["WWW-Authenticate"] = "Bearer"
        if isinstance(exc, exceptions.Throttled) and exc.wait is not None:
            response["Retry-After"] = str(int(exc.wait) + 1)
        elif isinstance(exc, LimitReached):
            response["Retry-After"] = str(exc.retry_after)
        elif (failure := database_failure(exc, self.request)) is not None:
            response["Retry-After"] = str(failure.retry_after)
        elif getattr(exc, "wait", None):
            response["Retry-After"] = str(int(exc.wait))
        return response

    def finalize_response(self, request: Request, response: Any, *args: Any, **kwargs: Any) -> Any:
        response = super().finalize_response(request, response, *args, **kwargs)
        if self.session_uuid:
            response[SESSION_HEADER] = self.session_uuid
        return response


class ModelListView(OpenAIView):
    @extend_schema(
        tags=["openai"],
        operation_id="openai_models_list",
        summary="The models /v1/chat/completions serves (CHAT_MODEL)",
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request) -> Response:
        return Response({"object": "list", "data": [model_object(settings.CHAT_MODEL)]})


class ModelDetailView(OpenAIView):
    @extend_schema(
        tags=["openai"],
        operation_id="openai_model_retrieve",
        summary="One model",
        responses={200: OpenApiTypes.OBJECT, 404: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request, model: str) -> Response:
        if model != settings.CHAT_MODEL:
            raise OpenAIError(
                f"The model {model!r} does not exist.", status=404, param="model", code="model_not_found"
            )
        return Response(model_object(model))



class TurnWriter(Protocol):
    """What an endpoint running a model turn answers in its own shapes."""

    def answer(self, completion: Completion) -> dict[str, Any]:
        """The whole answer, as JSON."""

    def opening(self) -> bytes:
        """The stream's events before the first chunk of text."""

    def delta(self, text: str) -> bytes:
        """The event of one chunk of text."""

    def closing(self, completion: Completion) -> bytes:
        """The events after the last chunk; the same bytes however often asked
        (the answer kept for an idempotency key is these very events)."""

    def error(self, error: OpenAIError) -> bytes:
        """The event that ends a stream failing after its first event."""


class TurnView(OpenAIView):
    """An endpoint that runs one model turn: ``begin`` resolves its session
    and memory, ``run`` asks the model, stores the exchange (keeping the
    answer for an ``Idempotency-Key`` in the same transaction) and answers
    in the ``TurnWriter``'s shapes, whole or streamed."""

    def begin(self, request: Request, chat: ChatRequest) -> PreparedTurn:
        require_chat_backend()
        # Before anything is written (a new session, imported history): a
        # caller at the model-call cap is refused with nothing done.
        check_model_call_allowed(user=request.user)
        turn = turn_begin(caller=request.user, request=chat)
        self.session_uuid = str(turn.session.uuid) if turn.session is not None else None
        return turn

    def run(self, request: Request, turn: PreparedTurn, writer: TurnWriter) -> HttpResponseBase:
        session_pk = turn.session.pk if turn.session is not None else None
        headers = {SESSION_HEADER: self.session_uuid} if self.session_uuid else {}
        if not turn.request.stream:
            payload: dict[str, Any] = {}

            def keep(finished: FinishedTurn) -> Answer:
                # Built once, inside the store: a retry by key gets these very bytes.
                payload.update(writer.answer(finished.completion))
                return Answer(200, "application/json", JSONRenderer().render(payload), headers)

            try:
                finished = turn_answer(turn, before_commit=store_hook(request, keep, session_pk=session_pk))
            except ClientGone:
                return HttpResponse(status=CLIENT_CLOSED_REQUEST)  # nobody reads it
            return Response(payload or writer.answer(finished.completion))
        sent: list[bytes] = []

        def keep_stream(finished: FinishedTurn) -> Answer:
            body = b"".join(sent) + writer.closing(finished.completion)
            return Answer(200, "text/event-stream", body, headers)

        # Asks the model now: a model that is down answers with its status.
        stream = TurnStream(turn, before_commit=store_hook(request, keep_stream, session_pk=session_pk))
        response = StreamingHttpResponse(turn_events(stream, writer, sent), content_type="text/event-stream")
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"
        return response


#: What a model turn may answer besides its 200 and its own 404, for the
#: schema of every /v1 endpoint that runs one.
TURN_ERRORS = {
    400: OpenApiResponse(description="Bad or unsupported parameter (`param` names it)."),
    401: OpenApiResponse(description="Missing or bad token."),
    429: OpenApiResponse(description="Too many requests, or at UTILITY_CALLS_PER_USER_HOUR."),
    502: OpenApiResponse(description="The model answered with an error; nothing stored."),
    503: OpenApiResponse(description="The model is unreachable or busy, or the backend has no chat."),
    504: OpenApiResponse(description="The model did not finish within CHAT_TURN_TIMEOUT_SECONDS."),
}


def turn_schema(*, operation_id: str, summary: str, description: str, not_found: str) -> Callable:
    """The schema of an endpoint that runs a model turn: its session header,
    ``Idempotency-Key``, and the errors every turn may answer."""
    return extend_schema(
        tags=["openai"],
        operation_id=operation_id,
        summary=summary,
        description=description,
        parameters=[
            OpenApiParameter(SESSION_HEADER, OpenApiTypes.UUID, OpenApiParameter.HEADER, required=False),
            KEY_PARAM,
        ],
        request=OpenApiTypes.OBJECT,
        responses={200: OpenApiTypes.OBJECT, 404: OpenApiResponse(description=not_found), **TURN_ERRORS},
    )


class ChatCompletionsView(TurnView):
    @turn_schema(
        operation_id="openai_chat_completions",
        summary="OpenAI-compatible chat completions with Nexus's memory of the session",
        description=(
            "OpenAI's request and response (`stream: true` answers `chat.completion.chunk` events ending "
            "with `data: [DONE]`). The session is `X-Nexus-Session`, else `metadata.nexus_session`, else the "
            "session of the end user (`user`, else `safety_identifier`) whose whole history is the request's "
            "earlier user/assistant messages, else a new one of that end user into which those are imported; "
            "the answer names it in `X-Nexus-Session`. The model gets the request's system messages, Nexus's "
            "memory for the last user message, then that message; the exchange is stored as an episode. "
            "`metadata.nexus_budget` sets the memory's token budget; `metadata.nexus_asked_at` (ISO 8601 "
            "with a UTC offset, default now) when the message is asked, against which the dates it names "
            "('last week') are resolved. `store: false` reads the memory and stores nothing."
        ),
        not_found="Unknown model or session.",
    )
    @idempotent(model_call=True)
    def post(self, request: Request) -> HttpResponseBase:
        body = parse_request(request.data, header_session=request.headers.get(SESSION_HEADER))
        turn = self.begin(request, body)
        return self.run(request, turn, ChunkWriter(model=body.model, include_usage=body.include_usage))


def turn_events(stream: TurnStream, writer: TurnWriter, sent: list[bytes]) -> Iterator[bytes]:
    """The SSE body. The episode is stored when the model's chunks end, before
    the closing events; a failure after the first event ends in an error
    event (the SDKs raise it), and a client that goes away closes this
    generator (or, unnoticed, is found gone before the store): nothing is
    stored either way. ``sent`` collects the events as they go out."""
    try:
        for event in _text_events(stream, writer):
            sent.append(event)
            yield event
        assert stream.finished is not None
        yield writer.closing(stream.finished.completion)
    except ClientGone:
        return
    except Exception as exc:  # noqa: BLE001 - the status line is gone: say it in the stream
        yield writer.error(as_openai_error(exc))
    finally:
        stream.close()


def _text_events(stream: TurnStream, writer: TurnWriter) -> Iterator[bytes]:
    yield writer.opening()
    for text in stream:
        yield writer.delta(text)
