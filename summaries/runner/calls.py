"""The model call of a run: the call itself, its ``UtilityCall`` cost record
(written, then settled once the answer is stored or dropped) and its record
on the ``nexus.summarization`` logger."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace

from django.conf import settings
from django.db import DatabaseError, IntegrityError

from sessions_app.models import ChatSession
from summaries.inference import Completion, InferenceClient, InferenceError, get_client
from summaries.model_cap import counts_against_cap
from summaries.models import UtilityCall

logger = logging.getLogger("nexus.summarization")


def resolve_client(client: InferenceClient | None) -> InferenceClient:
    """The client a run calls: the one its caller passed, else the backend
    named by ``settings.INFERENCE_BACKEND`` (see ``summaries.inference``)."""
    return client if client is not None else get_client()


@dataclass(frozen=True, slots=True)
class SessionRefs:
    """What a run needs to know of its session besides the rows it folds:
    its external id (for the log records; "" when the session is gone) and
    its owner (whose model-call cap background passes count against)."""

    uuid: str
    owner_pk: int | None


def session_refs_of(session_pk: int) -> SessionRefs:
    row = ChatSession.objects.filter(pk=session_pk).values_list("uuid", "owner_id").first()
    return SessionRefs(str(row[0]), row[1]) if row else SessionRefs("", None)


@dataclass(frozen=True, slots=True)
class CallSpan:
    """What a model call is about: the session, the episodes in its prompt,
    the kind of call (for the cost record and the log), and the user it is
    charged to (``UtilityCall.charged_to``)."""

    session_pk: int
    session_uuid: str
    first_episode_id: int
    last_episode_id: int
    kind: UtilityCall.Kind
    log_kind: str
    charged_to: int | None

    @property
    def episode_range(self) -> str:
        return f"{self.first_episode_id}-{self.last_episode_id}"


@dataclass(frozen=True, slots=True)
class Answer:
    """A model's answer and the primary key of its ``UtilityCall`` row (None
    if that could not be written)."""

    completion: Completion
    call_pk: int | None


def call_model(client: InferenceClient, prompt: str, span: CallSpan) -> Answer:
    """One model call with the summarization settings, and its cost record.

    A failure is recorded, logged (the attempt's one record) and raised.
    Call outside any transaction: the call may take up to the client timeout.
    A client that calls no model (the offline digest) charges nobody.
    """
    if not counts_against_cap(client):
        span = replace(span, charged_to=None)
    started = time.perf_counter()
    try:
        completion = client.complete(
            prompt,
            model=settings.UTILITY_MODEL,
            temperature=settings.SUMMARY_TEMPERATURE,
            max_tokens=settings.SUMMARY_GEN_MAX_TOKENS,
        )
    except InferenceError as exc:
        duration_ms = round((time.perf_counter() - started) * 1000)
        outcome = (
            UtilityCall.Outcome.TRANSIENT_ERROR if exc.transient else UtilityCall.Outcome.PERMANENT_ERROR
        )
        # A failed call reports no token figures: it is recorded with zeros.
        _record_call(span, outcome=outcome, model=settings.UTILITY_MODEL, duration_ms=duration_ms)
        log_call(
            span,
            kind=span.log_kind,
            outcome=outcome.value,
            duration_ms=duration_ms,
            error=str(exc),
            prompt=prompt,
            level=logging.WARNING,
        )
        raise
    call_pk = _record_call(
        span,
        outcome=UtilityCall.Outcome.OK,
        model=completion.model,
        prompt_tokens=completion.prompt_tokens,
        completion_tokens=completion.completion_tokens,
        duration_ms=completion.duration_ms,
    )
    return Answer(completion, call_pk)


def _record_call(
    span: CallSpan,
    *,
    outcome: UtilityCall.Outcome,
    model: str,
    prompt_tokens: int = 0,
    completion_tokens: int = 0,
    duration_ms: int = 0,
) -> int | None:
    """Write one ``UtilityCall`` row, on its own (the runner works outside any
    transaction, so this is one short autocommitted insert, holding no lock
    the lease or a summary row needs). A failure to write it is logged, never
    raised: what the run does next must not depend on the cost record.

    A session erased while its model call ran is gone: the call is then
    kept unlinked, like the calls of any deleted session, so usage totals
    still count it."""
    fields = {
        "kind": span.kind,
        "model": model[:200],
        "prompt_tokens": max(0, prompt_tokens),
        "completion_tokens": max(0, completion_tokens),
        "duration_ms": max(0, duration_ms),
        "outcome": outcome,
        "first_episode_id": span.first_episode_id,
        "last_episode_id": span.last_episode_id,
        "charged_to_id": span.charged_to,
    }
    try:
        try:
            call = UtilityCall.objects.create(session_id=span.session_pk, **fields)
        except IntegrityError:  # the session's row is gone
            call = UtilityCall.objects.create(session_id=None, **fields)
    except DatabaseError:
        logger.exception(
            "utility call not recorded",
            extra={"session": span.session_uuid, "episode_range": span.episode_range, "outcome": outcome},
        )
        return None
    return call.pk


def settle_calls(call_pks: list[int | None], *, summary_pk: int | None = None, dropped: bool = False) -> None:
    """After the store: link the calls to the row their answers went into, or
    mark them dropped (the rows or the lease changed while they ran). One
    short write, outside any transaction; a failure is logged, not raised."""
    pks = [pk for pk in call_pks if pk is not None]
    if not pks:
        return
    changes: dict[str, object] = (
        {"outcome": UtilityCall.Outcome.DROPPED_STALE} if dropped else {"summary_id": summary_pk}
    )
    try:
        UtilityCall.objects.filter(pk__in=pks).update(**changes)
    except DatabaseError:
        logger.exception("utility calls not settled", extra={"outcome": "record_failed"})


def log_call(
    span: CallSpan,
    *,
    kind: str,
    outcome: str,
    completion: Completion | None = None,
    duration_ms: int = 0,
    error: str = "",
    prompt: str | None = None,
    level: int = logging.INFO,
) -> None:
    """The one ``nexus.summarization`` record of a call; the prompt and the
    answer text go in only with ``settings.LOG_CONTENT``."""
    extra: dict[str, object] = {
        "session": span.session_uuid,
        "episode_range": span.episode_range,
        "kind": kind,
        "prompt_tokens": completion.prompt_tokens if completion else 0,
        "completion_tokens": completion.completion_tokens if completion else 0,
        "duration_ms": completion.duration_ms if completion else duration_ms,
        "outcome": outcome,
        "error": error,
    }
    if settings.LOG_CONTENT:
        extra["prompt"] = prompt
        extra["answer"] = completion.text if completion else None
    logger.log(level, "summarization %s %s: %s", kind, span.episode_range, outcome, extra=extra)
