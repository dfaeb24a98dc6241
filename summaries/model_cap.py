"""The optional cap on model calls per user and rolling hour
(``UTILITY_CALLS_PER_USER_HOUR``; unset: no cap).

What counts: every model call attributed to a user, answered or not. A
utility call counts against ``UtilityCall.charged_to`` (whoever asked for a
regeneration, a rebuild or a summary now; for background summarization the
session's owner), a chat turn's call against ``ChatCall.user`` (whoever
sent the message). The offline backend calls no model: its digests and its
marked replies count nothing, and requests it would serve are never refused.
The cap applies to every account, staff and superusers included: it bounds
what one account can make the model servers do.

What it does:

- A request that explicitly asks for model work (regenerate, rebuild,
  summarize now, a chat turn on any interface) is refused while its
  requester is at the cap: ``check_model_call_allowed`` raises
  ``ModelCallCapReached``, answered 429 with ``Retry-After``.
- An episode write never fails because of it. A background pass whose
  session owner is at the cap makes no call: the runner records when the
  cap allows again (``SummarizationState.deferred_until``) and leaves the
  episodes pending, so neither the write path's gate nor the sweep sends
  the session again before then, and the sweep or the next write after that
  picks it up. Nothing is lost and nothing is marked failed.
- Work once admitted runs to its end: a rebuild's many calls, or requests
  racing each other, can pass the cap by what was admitted; the requests
  after them wait that much longer.

Why the database is the count, not the shared store (``nexus.counters``):
each call already leaves a row, written by the process that made it (the web
process for chat turns, a worker for summaries), so the cap counts exactly
what the usage report shows, over a true rolling hour, whatever the
topology. The shared cache is per process with ``CACHE_URL=locmem://`` (a
worker would never see the web's chat calls), and flushing it would reset
everyone's count. The read is one query over two index ranges
(``(charged_to, created_at)`` and ``(user, created_at)``), bounded by the
calls of one user's hour; it runs on explicit requests and before each
background pass while a cap is set, never on an episode write.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from nexus.errors import LimitReached
from sessions_app.models import ChatSession
from summaries.inference import InferenceClient, get_client
from summaries.inference.offline import OfflineClient
from summaries.models import ChatCall, UtilityCall

WINDOW = timedelta(hours=1)


class ModelCallCapReached(LimitReached):
    """The requester made ``UTILITY_CALLS_PER_USER_HOUR`` model calls in the last hour."""

    def __init__(self, *, cap: int, wait: timedelta) -> None:
        seconds = math.ceil(wait.total_seconds())
        minutes = math.ceil(seconds / 60)
        when = f"{seconds} seconds" if seconds < 120 else f"{minutes} minutes"
        super().__init__(
            f"Model-call limit reached: {cap} model calls per user per hour. Nothing was done; "
            f"try again in {when}.",
            retry_after=seconds,
        )


def counts_against_cap(client: Any) -> bool:
    """Whether a call through ``client`` reaches a model (the offline backend's never do)."""
    return not isinstance(client, OfflineClient)


def model_call_wait(user_pk: int | None, *, now: datetime | None = None) -> timedelta | None:
    """How long until ``user_pk`` may make another model call; ``None``
    when they may now (or there is no cap, or no user)."""
    cap = settings.UTILITY_CALLS_PER_USER_HOUR
    if cap is None or user_pk is None:
        return None
    now = now or timezone.now()
    since = now - WINDOW
    utility = UtilityCall.objects.filter(charged_to_id=user_pk, created_at__gt=since)
    chat = ChatCall.objects.filter(user_id=user_pk, created_at__gt=since)
    calls = (
        utility.order_by()
        .values_list("created_at", flat=True)
        .union(chat.order_by().values_list("created_at", flat=True), all=True)
    )
    # The cap-th newest call of the hour: once it is an hour old, fewer than
    # ``cap`` calls are left in the window and the next one may be made.
    nth = list(calls.order_by("-created_at")[cap - 1 : cap])
    if not nth:
        return None
    return nth[0] + WINDOW - now


def check_model_call_allowed(*, user: Any) -> None:
    """For a request that asks for model work: ``ModelCallCapReached`` while
    ``user`` is at the cap. Nothing to check without a cap, for nobody, or
    when the configured backend calls no model."""
    cap = settings.UTILITY_CALLS_PER_USER_HOUR
    if cap is None or user is None or not user.is_authenticated:
        return
    if not counts_against_cap(get_client()):
        return
    wait = model_call_wait(user.pk)
    if wait is not None:
        raise ModelCallCapReached(cap=cap, wait=wait)


def chat_call_record(*, user: Any, session: ChatSession | None, client: InferenceClient) -> None:
    """Record the chat-model call about to be made through ``client`` for
    ``user``: it counts whether or not the model answers. Nothing for a
    client that calls no model, nor without a cap: the row exists only to be
    counted, and a chat turn is the hot path (enabling the cap starts the count)."""
    if settings.UTILITY_CALLS_PER_USER_HOUR is None or not counts_against_cap(client):
        return
    ChatCall.objects.create(
        user=user if user is not None and user.is_authenticated else None,
        session_id=session.pk if session is not None else None,
        model=settings.CHAT_MODEL[:200],
    )
