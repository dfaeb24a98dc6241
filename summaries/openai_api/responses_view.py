"""``POST /v1/responses``: OpenAI's Responses API for text, with Nexus's memory.

The same turn as ``/v1/chat/completions`` (``views.TurnView``): the same
session rules, memory, model call, stored episode and ``Idempotency-Key``
handling; only the request and answer are in the Responses shapes
(``responses_request``, ``responses_format``).
"""

from __future__ import annotations

from django.http import HttpResponseBase
from rest_framework.request import Request

from sessions_app.api.idempotency import idempotent
from sessions_app.errors import SessionNotFound
from summaries.openai_api.response_ids import response_id
from summaries.openai_api.responses_format import ResponseWriter
from summaries.openai_api.responses_request import parse_responses, previous_not_found
from summaries.openai_api.views import SESSION_HEADER, TurnView, turn_schema


class ResponsesView(TurnView):
    @turn_schema(
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
        not_found="Unknown model, session or previous response.",
    )
    @idempotent(model_call=True)
    def post(self, request: Request) -> HttpResponseBase:
        call = parse_responses(request.data, header_session=request.headers.get(SESSION_HEADER))
        try:
            turn = self.begin(request, call.chat)
        except SessionNotFound:
            if call.session_from_previous:
                raise previous_not_found(call.previous_response_id) from None
            raise
        # Only a stored response can be continued: the id of any other resolves to nothing.
        session = turn.session if call.chat.store else None
        writer = ResponseWriter(call, response_id=response_id(session.uuid if session else None))
        return self.run(request, turn, writer)
