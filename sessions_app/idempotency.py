"""Idempotency keys: a write retried with the same key is made once.

A client that lost the answer to a write (a timeout, a dropped connection, a
503 that could not say whether it was stored) sends it again with the same
``Idempotency-Key``; it gets the first answer back instead of a second
episode and a second model call. The HTTP side is
``sessions_app.api.idempotency``; this module keeps the rows.

A key is claimed by inserting its row (unique per user). A quick write
claims, writes and keeps its answer in one transaction: on PostgreSQL a
concurrent duplicate waits on the unique index and then reads the answer.
A chat turn cannot hold a transaction across its model call, so it claims
first (committed, with a lease of ``CHAT_TURN_TIMEOUT_SECONDS`` and a
margin), and keeps its answer in the transaction that stores its episode;
a duplicate meanwhile is told to retry (``KeyInUse``), and a claim whose
holder died is taken over once its lease has run out.

Rows live ``IDEMPOTENCY_KEY_TTL_SECONDS``; ``idempotency_keys_purge``
deletes older ones, and a claim finds an expired row as if there were none.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Subquery
from django.utils import timezone

from sessions_app.models import IdempotencyKey

#: Margin of a chat turn's lease beyond its deadline: storing and answering take a moment too.
LEASE_MARGIN_SECONDS = 30
#: Seconds a duplicate is asked to wait while the first request still runs.
IN_USE_RETRY_AFTER = 1


class KeyReused(Exception):
    """The key was used before for a different request (method, path or body)."""


class KeyInUse(Exception):
    """A request with this key is still being answered."""


class KeyLost(Exception):
    """The claim was taken over (its lease ran out) before the answer was kept."""


@dataclass(frozen=True, slots=True)
class Answer:
    """An answer as it went out: enough to send it again."""

    status: int
    content_type: str
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Claim:
    """The right to answer a key; ``finish`` keeps the answer, ``release`` gives the key up."""

    pk: int
    token: uuid.UUID
    finished: bool = False

    def finish(self, answer: Answer, *, session_pk: int | Subquery | None = None) -> None:
        """Keep ``answer`` for the key, in the caller's transaction when there
        is one (the write's: both commit or neither), in one statement (the
        session may be given as a subquery it reads). ``KeyLost`` if the claim
        is no longer ours."""
        kept = IdempotencyKey.objects.filter(
            pk=self.pk, claim=self.token, state=IdempotencyKey.State.IN_PROGRESS
        ).update(
            state=IdempotencyKey.State.DONE,
            status_code=answer.status,
            content_type=answer.content_type,
            body=answer.body,
            headers=answer.headers,
            session_id=session_pk,
        )
        if not kept:
            raise KeyLost
        self.finished = True

    def release(self) -> None:
        """Give the key up (the request failed and stored nothing): a retry runs afresh."""
        IdempotencyKey.objects.filter(
            pk=self.pk, claim=self.token, state=IdempotencyKey.State.IN_PROGRESS
        ).delete()


def request_fingerprint(method: str, path: str, body: bytes, *, accept: str = "") -> str:
    """What tells one request from another: method, path, body and the form of
    answer asked for (a chat turn streams or not by its ``Accept``)."""
    digest = hashlib.sha256()
    for part in (method.upper().encode(), path.encode(), accept.encode(), body):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


def chat_lease_seconds() -> float:
    return settings.CHAT_TURN_TIMEOUT_SECONDS + LEASE_MARGIN_SECONDS


def key_claim(*, user: Any, key: str, fingerprint: str, lease_seconds: float) -> Claim | Answer:
    """Claim ``key`` for ``user``'s request, or the answer kept for it.

    Raises ``KeyReused`` when the key belongs to another request and
    ``KeyInUse`` while another request holds it.
    """
    for _ in range(3):
        now = timezone.now()
        try:
            with transaction.atomic():
                row = IdempotencyKey.objects.create(
                    user=user,
                    key=key,
                    fingerprint=fingerprint,
                    locked_until=now + timedelta(seconds=lease_seconds),
                    expires_at=now + timedelta(seconds=settings.IDEMPOTENCY_KEY_TTL_SECONDS),
                )
            return Claim(row.pk, row.claim)
        except IntegrityError:
            pass
        existing = IdempotencyKey.objects.filter(user=user, key=key).first()
        if existing is None:
            continue  # released meanwhile: claim it afresh
        if existing.expires_at <= now:
            IdempotencyKey.objects.filter(pk=existing.pk, expires_at__lte=now).delete()
            continue
        if existing.fingerprint != fingerprint:
            raise KeyReused
        if existing.state == IdempotencyKey.State.DONE:
            return Answer(
                status=existing.status_code or 200,
                content_type=existing.content_type,
                body=bytes(existing.body or b""),
                headers=dict(existing.headers or {}),
            )
        if existing.locked_until > now:
            raise KeyInUse
        # The holder's lease ran out (its process died, or it never finished): take it over.
        token = uuid.uuid4()
        taken = IdempotencyKey.objects.filter(
            pk=existing.pk, state=IdempotencyKey.State.IN_PROGRESS, locked_until__lte=now
        ).update(claim=token, locked_until=now + timedelta(seconds=lease_seconds))
        if taken:
            return Claim(existing.pk, token)
        raise KeyInUse
    raise KeyInUse


def idempotency_keys_purge(*, batch_size: int = 5000) -> int:
    """Delete the rows past ``IDEMPOTENCY_KEY_TTL_SECONDS``; returns how many."""
    deleted = 0
    while True:
        pks = list(
            IdempotencyKey.objects.filter(expires_at__lte=timezone.now()).values_list("pk", flat=True)[
                :batch_size
            ]
        )
        if not pks:
            return deleted
        count, _ = IdempotencyKey.objects.filter(pk__in=pks).delete()
        deleted += count


def idempotency_keys_erase(*, user: Any) -> int:
    """Forget every answer kept for ``user`` (they hold what the user wrote)."""
    count, _ = IdempotencyKey.objects.filter(user=user).delete()
    return count
