"""One chat-completions turn: memory, chat model, stored episode.

As for ``summaries.chat``: the model is called outside any transaction and
the exchange is stored only after its last chunk, so a model error, a
timeout (``CHAT_TURN_TIMEOUT_SECONDS`` overall) or a client that goes away
stores nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from nexus.write_outcome import atomic_write
from sessions_app.models import ChatSession, Episode
from sessions_app.services import episode_create_for_user
from summaries.context import ContextResult, build_context, turn_budget
from summaries.inference import ChatStream, Completion, InferenceError, deadline_after, get_client, within
from summaries.model_cap import chat_call_record
from summaries.openai_api.memory import MEMORY_HEADER, model_messages
from summaries.openai_api.request import ChatRequest
from summaries.turn_metadata import stored_turn


@dataclass(slots=True)
class PreparedTurn:
    caller: Any
    #: ``None`` for a ``store: false`` turn whose session would have been new (``begin``).
    session: ChatSession | None
    request: ChatRequest
    context: ContextResult
    messages: list[dict[str, str]]
    #: ``CHAT_TURN_TIMEOUT_SECONDS`` from the turn's start (a ``time.monotonic()`` reading).
    deadline: float


@dataclass(slots=True)
class FinishedTurn:
    completion: Completion
    #: ``None`` for a ``store: false`` turn.
    episode: Episode | None


#: Run inside the transaction that stores the episode, before it commits
#: (the view keeps the answer for an idempotency key, or checks that the
#: client is still connected); raising stores nothing.
BeforeCommit = Callable[[FinishedTurn], None]


def turn_prepare(*, caller: Any, session: ChatSession, request: ChatRequest) -> PreparedTurn:
    """Build the memory for the last user message (``ContextTooLarge`` when it cannot fit the budget)."""
    # The client's own system messages count against the cap too, and so does
    # the question, sent again after the memory; what is left holds the memory.
    besides = [m.content for m in request.instructions] + [MEMORY_HEADER, request.question]
    deadline = deadline_after(settings.CHAT_TURN_TIMEOUT_SECONDS)
    limit = turn_budget(request.budget, besides=besides)
    context = build_context(
        session=session, question=request.question, budget=limit, asked_at=request.asked_at
    )
    return PreparedTurn(caller, session, request, context, model_messages(request, context), deadline)


def turn_store(
    *, turn: PreparedTurn, completion: Completion, before_commit: BeforeCommit | None = None
) -> FinishedTurn:
    """The finished exchange as an episode; ``SessionNotFound`` if the session went meanwhile."""
    assert turn.session is not None  # a turn without one is never stored
    response, metadata = stored_turn(
        source="openai_api",
        completion=completion,
        context=turn.context,
        session=turn.session,
        question=turn.request.question,
    )
    if turn.request.user:
        metadata["openai_user"] = turn.request.user
    with atomic_write():
        # The write path API clients use: one statement on PostgreSQL.
        episode = episode_create_for_user(
            user=turn.caller,
            session_uuid=turn.session.uuid,
            user_input=turn.request.question,
            response=response,
            metadata=metadata,
        )
        finished = FinishedTurn(completion, episode)
        if before_commit is not None:
            before_commit(finished)
    return finished


def turn_finish(
    *, turn: PreparedTurn, completion: Completion, before_commit: BeforeCommit | None = None
) -> FinishedTurn:
    """Store the exchange, unless the request said ``store: false``: then
    nothing of the turn is written, and ``before_commit`` still runs (an
    ``Idempotency-Key`` keeps its answer, a client gone is noticed)."""
    if turn.request.store:
        return turn_store(turn=turn, completion=completion, before_commit=before_commit)
    finished = FinishedTurn(completion, None)
    if before_commit is not None:
        with atomic_write():
            before_commit(finished)
    return finished


def _call_options(request: ChatRequest) -> dict:
    return {
        "model": settings.CHAT_MODEL,
        "temperature": request.temperature,
        "max_tokens": request.max_tokens,
        "sampling": request.sampling,
    }


def turn_answer(turn: PreparedTurn, *, before_commit: BeforeCommit | None = None) -> FinishedTurn:
    """Ask the model and store the exchange; ``InferenceError`` stores nothing."""
    client = get_client()
    chat_call_record(user=turn.caller, session=turn.session, client=client)
    with within(turn.deadline):
        completion = client.chat(turn.messages, **_call_options(turn.request))
    return turn_finish(turn=turn, completion=completion, before_commit=before_commit)


class TurnStream(Iterator[str]):
    """The reply's text chunks. The model is asked at construction (a model
    that is down raises ``InferenceError`` there, before anything is sent);
    when the iteration ends the episode is stored and ``finished`` holds it.
    ``close()`` before that abandons the turn: nothing is stored."""

    def __init__(self, turn: PreparedTurn, *, before_commit: BeforeCommit | None = None) -> None:
        self.turn = turn
        self.before_commit = before_commit
        self.finished: FinishedTurn | None = None
        client = get_client()
        chat_call_record(user=turn.caller, session=turn.session, client=client)
        with within(turn.deadline):
            self._stream: ChatStream = client.chat_stream(turn.messages, **_call_options(turn.request))

    def __iter__(self) -> TurnStream:
        return self

    def __next__(self) -> str:
        try:
            # Set around every read: the chunks are read while the response is sent.
            with within(self.turn.deadline):
                return next(self._stream)
        except StopIteration:
            completion = self._stream.completion
            if completion is None:
                raise InferenceError("the stream ended without a complete reply") from None
            self.finished = turn_finish(
                turn=self.turn, completion=completion, before_commit=self.before_commit
            )
            raise

    def close(self) -> None:
        self._stream.close()
