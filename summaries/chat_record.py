"""What a chat turn reports: its errors, its timings, the turn itself and its log record.

Each turn writes one record on the ``nexus.chat`` logger with its timings
(``context_ms``, ``model_ms``, ``total_ms``) and token figures; the user's
message and the reply are added only when ``settings.LOG_CONTENT`` is on.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from sessions_app.models import ChatSession, Episode
from summaries.context import ContextResult
from summaries.inference import ContextWindowExceeded, DeadlineExceeded, InferenceError, deadline_after

logger = logging.getLogger("nexus.chat")


def turn_timed_out() -> str:
    """What a turn past ``CHAT_TURN_TIMEOUT_SECONDS`` answers, on every endpoint that runs one."""
    return (
        f"The chat model did not finish its reply within {settings.CHAT_TURN_TIMEOUT_SECONDS:g} seconds "
        "(CHAT_TURN_TIMEOUT_SECONDS); nothing was stored. Please try again."
    )


MODEL_UNAVAILABLE = "The chat model is not available right now; nothing was stored. Please try again shortly."


class ChatTurnError(Exception):
    """The chat model gave no complete reply; nothing was stored.

    ``transient`` says whether trying again later may help (timeouts,
    unreachable server, 429, 5xx). ``timed_out``: the turn ran past
    ``CHAT_TURN_TIMEOUT_SECONDS``. ``message`` is written for the person
    chatting and names no internal address; the underlying error is logged.
    """

    def __init__(self, message: str, *, transient: bool, timed_out: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.transient = transient
        self.timed_out = timed_out

    @classmethod
    def from_inference(cls, err: InferenceError) -> ChatTurnError:
        if isinstance(err, DeadlineExceeded):
            return cls(turn_timed_out(), transient=True, timed_out=True)
        if err.transient:
            return cls(MODEL_UNAVAILABLE, transient=True)
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


def _turn_deadline() -> float:
    return deadline_after(settings.CHAT_TURN_TIMEOUT_SECONDS)


@dataclass(slots=True)
class Timings:
    """Milliseconds spent per phase of one turn, and the turn's deadline
    (``CHAT_TURN_TIMEOUT_SECONDS`` from its start, a ``time.monotonic()`` reading)."""

    started: float = field(default_factory=time.perf_counter)
    deadline: float = field(default_factory=_turn_deadline)
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


def log_turn(
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
