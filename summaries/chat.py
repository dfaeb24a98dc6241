"""One chat turn: context, chat model, stored episode.

The episode is written only after the model has answered completely, so a
failed or interrupted reply leaves nothing half-written behind. The model is
called outside any transaction: ``episode_create`` opens its own short one
afterwards, and its post-save path triggers summarization.

Each turn writes one record on the ``nexus.chat`` logger
(``summaries.chat_record``). A turn has an overall deadline,
``CHAT_TURN_TIMEOUT_SECONDS`` from its start, that every model request and
every streamed chunk is held to.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import datetime
from functools import partial
from typing import Any

from django.conf import settings

from nexus.client_connection import ClientGone
from nexus.write_outcome import atomic_write
from sessions_app.errors import SessionNotFound
from sessions_app.models import ChatSession
from sessions_app.services import episode_create
from summaries.chat_record import ChatSessionGone, ChatTurn, ChatTurnError, Timings, log_turn
from summaries.context import ContextResult, build_context, turn_budget
from summaries.inference import ChatStream, Completion, InferenceError, get_client, within
from summaries.model_cap import chat_call_record, check_model_call_allowed
from summaries.turn_metadata import stored_turn

__all__ = [
    "SYSTEM_PROMPT",
    "ChatSessionGone",
    "ChatTurn",
    "ChatTurnError",
    "ChatTurnStream",
    "chat_messages",
    "chat_turn",
    "chat_turn_stream",
]

SYSTEM_PROMPT = (
    "You are a helpful assistant in an ongoing conversation. The user's message contains the "
    "current question, a summary of the earlier conversation and the most recent exchanges. "
    "Answer the current question; treat the rest as background."
)


def chat_messages(context: ContextResult) -> list[dict[str, str]]:
    """The chat call's messages: a short system message, then the assembled
    context (which carries the question) as the user message."""
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": context.prompt},
    ]


def _prepare(
    *, caller: Any, session: ChatSession, message: str, budget: int | None, asked_at: datetime | None
) -> tuple[ContextResult, Timings]:
    # Before any work: a caller at the model-call cap gets ModelCallCapReached.
    check_model_call_allowed(user=caller)
    timings = Timings()
    # The whole prompt within the budget and CHAT_MAX_PROMPT_TOKENS, system message included.
    limit = turn_budget(budget, besides=[SYSTEM_PROMPT])
    context = build_context(session=session, question=message, budget=limit, asked_at=asked_at)
    timings.context_ms = timings.since_start()
    return context, timings


#: Run inside the transaction that stores a turn's episode, before it commits
#: (the API keeps the answer for an idempotency key there, or checks that the
#: client is still connected); raising stores nothing.
BeforeCommit = Callable[["ChatTurn"], None]


def _store(
    *,
    session: ChatSession,
    message: str,
    stream: bool,
    completion: Completion,
    context: ContextResult,
    timings: Timings,
    before_commit: BeforeCommit | None = None,
) -> ChatTurn:
    """Store the finished exchange and log the turn; ``ChatSessionGone`` if
    the session was deleted while the model answered, ``ClientGone`` (from
    ``before_commit``) if nobody waits for it any more."""
    log = partial(log_turn, session=session, message=message, stream=stream, timings=timings, context=context)
    response, metadata = stored_turn(
        source="chat", completion=completion, context=context, session=session, question=message
    )
    try:
        with atomic_write():
            episode = episode_create(
                session=session, user_input=message, response=response, metadata=metadata
            )
            timings.total_ms = timings.since_start()
            turn = ChatTurn(
                reply=completion.text,
                episode=episode,
                context=context,
                model=completion.model,
                completion_tokens=completion.completion_tokens,
                timings=timings,
            )
            if before_commit is not None:
                before_commit(turn)
    except SessionNotFound:
        log(outcome="session_gone")
        raise ChatSessionGone() from None
    except ClientGone:
        log(outcome="client_gone")
        raise
    log(turn=turn)
    return turn


def chat_turn(
    *,
    caller: Any,
    session: ChatSession,
    message: str,
    budget: int | None = None,
    asked_at: datetime | None = None,
    before_commit: BeforeCommit | None = None,
) -> ChatTurn:
    """Answer ``message`` of ``caller`` in ``session`` and store the exchange as an episode.

    Raises ``ChatTurnError`` when the model fails (``ChatSessionGone`` when
    the session was deleted meanwhile, ``ClientGone`` from ``before_commit``);
    nothing is stored then.
    ``ModelCallCapReached`` before anything is done while ``caller`` is at the cap.
    Must not be called inside a transaction: the model call can take long.
    """
    context, timings = _prepare(
        caller=caller, session=session, message=message, budget=budget, asked_at=asked_at
    )
    model_started = time.perf_counter()
    client = get_client()
    chat_call_record(user=caller, session=session, client=client)
    try:
        with within(timings.deadline):
            completion = client.chat(chat_messages(context), model=settings.CHAT_MODEL)
    except InferenceError as err:
        timings.model_done(model_started)
        log_turn(session=session, message=message, stream=False, timings=timings, context=context, error=err)
        raise ChatTurnError.from_inference(err) from err
    timings.model_done(model_started)
    return _store(
        session=session,
        message=message,
        stream=False,
        completion=completion,
        context=context,
        timings=timings,
        before_commit=before_commit,
    )


class ChatTurnStream(Iterator[str]):
    """A chat turn whose reply arrives as text chunks.

    Iterate for the chunks; when the iteration ends normally the episode has
    been stored and ``turn`` holds it. A model failure, before the first
    chunk or in the middle, raises ``ChatTurnError`` from the iteration and
    stores nothing; so does a session deleted meanwhile (``ChatSessionGone``).
    ``start()`` waits for the first chunk up front, so a caller can still
    answer with an error status when the model is down.
    ``close()`` abandons the turn (the client went away): nothing is stored.
    """

    def __init__(
        self,
        *,
        caller: Any,
        session: ChatSession,
        message: str,
        context: ContextResult,
        timings: Timings,
        before_commit: BeforeCommit | None = None,
    ) -> None:
        self.before_commit = before_commit
        self.caller = caller
        self.session = session
        self.message = message
        self.context = context
        self.timings = timings
        self.turn: ChatTurn | None = None
        self._model_started = time.perf_counter()
        self._stream: ChatStream | None = None
        self._pending: list[str] = []
        self._finished = False

    def _log(self, **outcome: Any) -> None:
        log_turn(
            session=self.session,
            message=self.message,
            stream=True,
            timings=self.timings,
            context=self.context,
            **outcome,
        )

    def _fail(self, err: InferenceError) -> ChatTurnError:
        self._finished = True
        self.timings.model_done(self._model_started)
        self._log(error=err)
        return ChatTurnError.from_inference(err)

    def _next_chunk(self) -> str:
        try:
            # Set around every read: the chunks are read while the response is sent.
            with within(self.timings.deadline):
                if self._stream is None:
                    self._model_started = time.perf_counter()
                    client = get_client()
                    chat_call_record(user=self.caller, session=self.session, client=client)
                    self._stream = client.chat_stream(chat_messages(self.context), model=settings.CHAT_MODEL)
                return next(self._stream)
        except InferenceError as err:
            raise self._fail(err) from err

    def start(self) -> ChatTurnStream:
        """Fetch the first chunk now; raises ``ChatTurnError`` if the model fails before it."""
        if not self._pending and not self._finished and self._stream is None:
            try:
                self._pending.append(self._next_chunk())
            except StopIteration:
                self._complete()
        return self

    def __iter__(self) -> ChatTurnStream:
        return self

    def __next__(self) -> str:
        if self._pending:
            return self._pending.pop(0)
        if self._finished:
            raise StopIteration
        try:
            return self._next_chunk()
        except StopIteration:
            self._complete()
            raise

    def _complete(self) -> None:
        self._finished = True
        self.timings.model_done(self._model_started)
        assert self._stream is not None
        completion = self._stream.completion
        if completion is None:  # a backend that ended without finishing: treat as failed
            raise self._fail(InferenceError("the stream ended without a complete reply"))
        self.turn = _store(
            session=self.session,
            message=self.message,
            stream=True,
            completion=completion,
            context=self.context,
            timings=self.timings,
            before_commit=self.before_commit,
        )

    def close(self) -> None:
        """Abandon an unfinished turn (the client went away): nothing is stored."""
        if self._finished:
            return
        self._finished = True
        self._pending.clear()
        if self._stream is not None:
            self._stream.close()
        self.timings.model_done(self._model_started)
        self._log(outcome="abandoned")


def chat_turn_stream(
    *,
    caller: Any,
    session: ChatSession,
    message: str,
    budget: int | None = None,
    asked_at: datetime | None = None,
    before_commit: BeforeCommit | None = None,
) -> ChatTurnStream:
    """A streamed chat turn: the context is built now (``ModelCallCapReached``
    first, as for ``chat_turn``), the model is asked when the chunks are first
    read (or at ``start()``)."""
    context, timings = _prepare(
        caller=caller, session=session, message=message, budget=budget, asked_at=asked_at
    )
    return ChatTurnStream(
        caller=caller,
        session=session,
        message=message,
        context=context,
        timings=timings,
        before_commit=before_commit,
    )
