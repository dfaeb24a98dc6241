"""``POST /v1/responses``: OpenAI's Responses API for text, with Nexus's memory.

The same turn as ``/v1/chat/completions`` (``begin``, ``turn``): the same
session rules, memory, model call, stored episode and ``Idempotency-Key``
handling; only the request and answer are in the Responses shapes
(``responses_request``, ``responses_format``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.http import HttpResponse, HttpResponseBase, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from nexus.client_connection import ClientGone
from sessions_app.api.idempotency import KEY_PARAM, idempotent, store_hook
from sessions_app.errors import SessionNotFound
from sessions_app.idempotency import Answer
from summaries.model_cap import check_model_call_allowed
from summaries.openai_api.begin import turn_begin
from summaries.openai_api.response_ids import response_id
from summaries.openai_api.responses_format import ResponseWriter
from summaries.openai_api.responses_request import parse_responses, previous_not_found
from summaries.openai_api.turn import FinishedTurn, TurnStream, turn_answer
from summaries.openai_api.views import (
    CLIENT_CLOSED_REQUEST,
    SESSION_HEADER,
    TURN_ERRORS,
    OpenAIView,
    as_openai_error,
    require_chat_backend,
)


class ResponsesView(OpenAIView):
    @extend_schema(
        tags=["openai"],
        operation_id="openai_responses_create",
        summary="OpenAI-compatible Responses (text) with Nexus's memory of the session",
        description=(
            "OpenAI's Responses request and answer for text: `input` as a string or message items, "
            "`instructions`, `previous_response_id` (continues the session of that response), `stream` "
            "(Responses events), `store` (`false`: the memory is read, nothing is stored). The session and "
            "memory rules are those of /v1/chat/completions: `X-Nexus-Session`, `metadata.nexus_session`, "
            "`metadata.nexus_budget`, `metadata.nexus_asked_at`; the answer names the session in "
            "`X-Nexus-Session`."
        ),
        parameters=[
            OpenApiParameter(SESSION_HEADER, OpenApiTypes.UUID, OpenApiParameter.HEADER, required=False),
            KEY_PARAM,
        ],
        request=OpenApiTypes.OBJECT,
        responses={
            200: OpenApiTypes.OBJECT,
            404: OpenApiResponse(description="Unknown model, session or previous response."),
            **TURN_ERRORS,
        },
    )
    @idempotent(model_call=True)
    def post(self, request: Request) -> HttpResponseBase:
        call = parse_responses(request.data, header_session=request.headers.get(SESSION_HEADER))
        require_chat_backend()
        check_model_call_allowed(user=request.user)
        try:
            turn = turn_begin(caller=request.user, request=call.chat)
        except SessionNotFound:
            if call.session_from_previous:
                raise previous_not_found(call.previous_response_id) from None
            raise
        session = turn.session
        self.session_uuid = str(session.uuid) if session is not None else None
        headers = {SESSION_HEADER: self.session_uuid} if self.session_uuid else {}
        session_pk = session.pk if session is not None else None
        # Only a stored response can be continued: the id of any other resolves to nothing.
        writer = ResponseWriter(
            call, response_id=response_id(session.uuid if session and call.chat.store else None)
        )
        if not call.chat.stream:
            payload: dict[str, Any] = {}

            def keep(finished: FinishedTurn) -> Answer:
                payload.update(writer.response(finished.completion))
                return Answer(200, "application/json", JSONRenderer().render(payload), headers)

            try:
                finished = turn_answer(turn, before_commit=store_hook(request, keep, session_pk=session_pk))
            except ClientGone:
                return HttpResponse(status=CLIENT_CLOSED_REQUEST)
            return Response(payload or writer.response(finished.completion))
        sent: list[bytes] = []

        def keep_stream(finished: FinishedTurn) -> Answer:
            return Answer(
                200, "text/event-stream", b"".join(sent) + writer.closing(finished.completion), headers
            )

        stream = TurnStream(turn, before_commit=store_hook(request, keep_stream, session_pk=session_pk))
        response = StreamingHttpResponse(
            response_events(stream, writer, sent), content_type="text/event-stream"
        )
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"
        return response


def response_events(stream: TurnStream, writer: ResponseWriter, sent: list[bytes]) -> Iterator[bytes]:
    """The SSE body, stored as chat completions' is: when the model's chunks
    end, before ``response.completed``; an error after the first event ends
    in an ``error`` event, and a client gone stores nothing."""
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


def _text_events(stream: TurnStream, writer: ResponseWriter) -> Iterator[bytes]:
    yield writer.opening()
    for text in stream:
        yield writer.delta(text)
