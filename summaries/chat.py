"""One chat turn: context, chat model, stored episode.

The episode is written only after the model has answered completely, so a
failed or interrupted reply leaves nothing half-written behind. The model is
called outside any transaction: ``episode_create`` opens its own short one
afterwards, and its post-save path triggers summarization.

Each turn writes one record on the ``nexus.chat`` logger with its timings
(``context_ms``, ``model_ms``, ``total_ms``) and token figures; the user's
message and the reply are added only when ``settings.LOG_CONTENT`` is on.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any

from django.conf import settings

from sessions_app.errors import SessionNotFound
from sessions_app.models import ChatSession, Episode
from sessions_app.services import episode_create
from summaries.context import ContextResult, build_context, turn_budget
from summaries.inference import ChatStream, Completion, ContextWindowExceeded, InferenceError, get_client
from summaries.model_cap import chat_call_record, check_model_call_allowed
from summaries.turn_metadata import turn_metadata

logger = logging.getLogger("nexus.chat")
Asked = datetime | None  # when the message is asked (``build_context``); None: now
Prepared = tuple[ContextResult, "Timings"]

SYSTEM_PROMPT = (
    "You are a helpful assistant in an ongoing conversation. The user's message contains the "
    "current question, a summary of the earlier conversation and the most recent exchanges. "
    "Answer the current question; treat the rest as background."
)


class ChatTurnError(Exception):
    """The chat model gave no complete reply; nothing was stored.

    ``transient`` says whether trying again later may help (timeouts,
    unreachable server, 429, 5xx). ``message`` is written for the person
    chatting and names no internal address; the underlying error is logged.
    """

    def __init__(self, message: str, *, transient: bool) -> None:
        super().__init__(message)
        self.message = message
        self.transient = transient

    @classmethod
    def from_inference(cls, err: InferenceError) -> ChatTurnError:
        if err.transient:
            return cls(
                "The chat model is not available right now; nothing was stored. Please try again shortly.",
                transient=True,
            )
        if isinstance(err, ContextWindowExceeded):
            # Says how large the prompt is and which setting bounds it; no address.
            return cls(f"{err.message} The message was not answered; nothing was stored.", transient=False)
        status = f" (HTTP {err.status_code})" if err.status_code else ""
        return cls(
            f"The chat model could not answer this message{status}; nothing was stored.",
            transient=False,
        )


class ChatSessionGone(ChatTurnError):
    """The session was deleted while the model answered; the reply was dropped."""

    def __init__(self) -> None:
        super().__init__(
            "This session was deleted while the reply was being written; nothing was stored.",
            transient=False,
        )


@dataclass(slots=True)
class Timings:
    """Milliseconds spent per phase of one turn."""

    started: float = field(default_factory=time.perf_counter)
    context_ms: float = 0.0
    model_ms: float = 0.0
    total_ms: float = 0.0

    def since_start(self) -> float:
        return (time.perf_counter() - self.started) * 1000

    def model_done(self, model_started: float) -> None:
        self.model_ms = (time.perf_counter() - model_started) * 1000


@dataclass(slots=True)
class ChatTurn:
    reply: str
    episode: Episode
    context: ContextResult
    model: str
    completion_tokens: int
    timings: Timings


def chat_messages(context: ContextResult) -> list[dict[str, str]]:
    """The chat call's messages: a short system message, then the assembled
    context (which carries the question) as the user message."""
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": context.prompt},
    ]


def _prepare(caller: Any, session: ChatSession, message: str, budget: int | None, asked: Asked) -> Prepared:
    # Before any work: a caller at the model-call cap gets ModelCallCapReached.
    check_model_call_allowed(user=caller)
    timings = Timings()
    # The whole prompt within the budget and CHAT_MAX_PROMPT_TOKENS, system message included.
    limit = turn_budget(budget, besides=[SYSTEM_PROMPT])
    context = build_context(session=session, question=message, budget=limit, asked_at=asked)
    timings.context_ms = timings.since_start()
    return context, timings


def _store(
    *,
    session: ChatSession,
    message: str,
    stream: bool,
    completion: Completion,
    context: ContextResult,
    timings: Timings,
) -> ChatTurn:
    """Store the finished exchange and log the turn; ``ChatSessionGone`` if
    the session was deleted while the model answered."""
    log = partial(
        _log_turn, session=session, message=message, stream=stream, timings=timings, context=context
    )
    try:
        episode = episode_create(
            session=session,
            user_input=message,
            response=completion.text,
            metadata=turn_metadata(
                source="chat", completion=completion, context=context, session=session, question=message
            ),
        )
    except SessionNotFound:
        log(outcome="session_gone")
        raise ChatSessionGone() from None
    timings.total_ms = timings.since_start()
    turn = ChatTurn(
        reply=completion.text,
        episode=episode,
        context=context,
        model=completion.model,
        completion_tokens=completion.completion_tokens,
        timings=timings,
    )
    log(turn=turn)
    return turn


def _log_turn(
    *,
    session: ChatSession,
    message: str,
    stream: bool,
    timings: Timings,
    context: ContextResult | None,
    turn: ChatTurn | None = None,
    error: InferenceError | None = None,
    outcome: str | None = None,
) -> None:
    if not timings.total_ms:
        timings.total_ms = timings.since_start()
    extra: dict[str, Any] = {
        "session": str(session.uuid),
        "stream": stream,
        "outcome": outcome or ("ok" if turn is not None else "error"),
        "context_ms": round(timings.context_ms, 1),
        "model_ms": round(timings.model_ms, 1),
        "total_ms": round(timings.total_ms, 1),
        "context_tokens": context.token_count if context else None,
        "full_history_tokens": context.full_history_tokens if context else None,
        "completion_tokens": turn.completion_tokens if turn else None,
        "model": turn.model if turn else settings.CHAT_MODEL,
        "episode": turn.episode.pk if turn else None,
        "error": str(error) if error else None,
        "transient": error.transient if error else None,
    }
    if settings.LOG_CONTENT:
        extra["question"] = message
        extra["reply"] = turn.reply if turn else None
    if turn is not None:
        logger.info("chat turn stored episode %s", turn.episode.pk, extra=extra)
    elif error is not None:
        logger.warning("chat turn failed, nothing stored: %s", error, extra=extra)
    else:
        logger.info("chat turn %s, nothing stored", extra["outcome"], extra=extra)


def chat_turn(
    *, caller: Any, session: ChatSession, message: str, budget: int | None = None, asked_at: Asked = None
) -> ChatTurn:
    """Answer ``message`` of ``caller`` in ``session`` and store the exchange as an episode.

    Raises ``ChatTurnError`` when the model fails (``ChatSessionGone`` when
    the session was deleted meanwhile); nothing is stored then.
    ``ModelCallCapReached`` before anything is done while ``caller`` is at the cap.
    Must not be called inside a transaction: the model call can take long.
    """
    context, timings = _prepare(caller, session, message, budget, asked_at)
    model_started = time.perf_counter()
    client = get_client()
    chat_call_record(user=caller, session=session, client=client)
    try:
        completion = client.chat(chat_messages(context), model=settings.CHAT_MODEL)
    except InferenceError as err:
        timings.model_done(model_started)
        _log_turn(session=session, message=message, stream=False, timings=timings, context=context, error=err)
        raise ChatTurnError.from_inference(err) from err
    timings.model_done(model_started)
    return _store(
        session=session,
        message=message,
        stream=False,
        completion=completion,
        context=context,
        timings=timings,
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
        self, *, caller: Any, session: ChatSession, message: str, context: ContextResult, timings: Timings
    ) -> None:
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
        _log_turn(
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
    *, caller: Any, session: ChatSession, message: str, budget: int | None = None, asked_at: Asked = None
) -> ChatTurnStream:
    """A streamed chat turn: the context is built now (``ModelCallCapReached``
    first, as for ``chat_turn``), the model is asked when the chunks are first
    read (or at ``start()``)."""
    context, timings = _prepare(caller, session, message, budget, asked_at)
    return ChatTurnStream(caller=caller, session=session, message=message, context=context, timings=timings)
