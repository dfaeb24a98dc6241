"""One chat-completions turn: memory, chat model, stored episode.

As for ``summaries.chat``: the model is called outside any transaction and
the exchange is stored only after its last chunk, so a model error, a
timeout or a client that goes away stores nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from sessions_app.models import ChatSession, Episode
from sessions_app.services import episode_create_for_user
from summaries.context import ContextResult, build_context, turn_budget
from summaries.inference import ChatStream, Completion, InferenceError, get_client
from summaries.model_cap import chat_call_record
from summaries.openai_api.memory import MEMORY_HEADER, model_messages
from summaries.openai_api.request import ChatRequest
from summaries.turn_metadata import turn_metadata


@dataclass(slots=True)
class PreparedTurn:
    caller: Any
    session: ChatSession
    request: ChatRequest
    context: ContextResult
    messages: list[dict[str, str]]


@dataclass(slots=True)
class FinishedTurn:
    completion: Completion
    episode: Episode


def turn_prepare(*, caller: Any, session: ChatSession, request: ChatRequest) -> PreparedTurn:
    """Build the memory for the last user message (``ContextTooLarge`` when it cannot fit the budget)."""
    # The client's own system messages count against the cap too, and so does
    # the question, sent again after the memory; what is left holds the memory.
    besides = [m.content for m in request.instructions] + [MEMORY_HEADER, request.question]
    limit = turn_budget(request.budget, besides=besides)
    context = build_context(
        session=session, question=request.question, budget=limit, asked_at=request.asked_at
    )
    return PreparedTurn(caller, session, request, context, model_messages(request, context))


def turn_store(*, turn: PreparedTurn, completion: Completion) -> Episode:
    """The finished exchange as an episode; ``SessionNotFound`` if the session went meanwhile."""
    metadata = turn_metadata(
        source="openai_api",
        completion=completion,
        context=turn.context,
        session=turn.session,
        question=turn.request.question,
    )
    if turn.request.user:
        metadata["openai_user"] = turn.request.user
    # The write path API clients use: one statement on PostgreSQL.
    return episode_create_for_user(
        user=turn.caller,
        session_uuid=turn.session.uuid,
        user_input=turn.request.question,
        response=completion.text,
        metadata=metadata,
    )


def _call_options(request: ChatRequest) -> dict:
    return {
        "model": settings.CHAT_MODEL,
        "temperature": request.temperature,
        "max_tokens": request.max_tokens,
        "sampling": request.sampling,
    }


def turn_answer(turn: PreparedTurn) -> FinishedTurn:
    """Ask the model and store the exchange; ``InferenceError`` stores nothing."""
    client = get_client()
    chat_call_record(user=turn.caller, session=turn.session, client=client)
    completion = client.chat(turn.messages, **_call_options(turn.request))
    return FinishedTurn(completion, turn_store(turn=turn, completion=completion))


class TurnStream(Iterator[str]):
    """The reply's text chunks. The model is asked at construction (a model
    that is down raises ``InferenceError`` there, before anything is sent);
    when the iteration ends the episode is stored and ``finished`` holds it.
    ``close()`` before that abandons the turn: nothing is stored."""

    def __init__(self, turn: PreparedTurn) -> None:
        self.turn = turn
        self.finished: FinishedTurn | None = None
        client = get_client()
        chat_call_record(user=turn.caller, session=turn.session, client=client)
        self._stream: ChatStream = client.chat_stream(turn.messages, **_call_options(turn.request))

    def __iter__(self) -> TurnStream:
        return self

    def __next__(self) -> str:
        try:
            return next(self._stream)
        except StopIteration:
            completion = self._stream.completion
            if completion is None:
                raise InferenceError("the stream ended without a complete reply") from None
            self.finished = FinishedTurn(completion, turn_store(turn=self.turn, completion=completion))
            raise

    def close(self) -> None:
        self._stream.close()
