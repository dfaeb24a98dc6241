"""The ``Idempotency-Key`` header on the API's writes (``/api/`` and ``/v1/``).

A write sent with ``Idempotency-Key: <1-255 visible ASCII characters>`` is
made once however often it is sent: a retry by the same user with the same
key, method, path and body gets the first answer back (with
``Idempotent-Replayed: true``) and nothing is written or asked of the model
again. The same key with another request is a 422; while the first request
is still being answered a duplicate gets a 409 with ``Retry-After`` (the
OpenAI SDKs retry a 409 by themselves). Only successful answers are kept: a
failed request stored nothing, so its retry runs afresh. Answers are kept
``IDEMPOTENCY_KEY_TTL_SECONDS``.

Views opt in with ``@idempotent()`` (a write with no model call: claim,
write and answer in one transaction) or ``@idempotent(model_call=True)`` (a
chat turn). A chat turn passes ``store_hook(...)`` to the service that
stores its episode: inside that transaction it keeps the answer for the key,
or, without a key, makes sure the client is still there (``ClientGone``
otherwise, and nothing is stored). With a key the answer is kept even when
the client has gone, since the key is how it comes back for it.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable, Iterator
from functools import wraps
from typing import Any, TypeVar

from django.db import DatabaseError
from django.db.models import Subquery
from django.http import HttpResponse, HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework import status
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.request import Request

from nexus.client_connection import ClientGone, client_gone
from nexus.write_outcome import atomic_write
from sessions_app.idempotency import (
    IN_USE_RETRY_AFTER,
    Answer,
    Claim,
    KeyInUse,
    KeyLost,
    KeyReused,
    chat_lease_seconds,
    key_claim,
    request_fingerprint,
)
from sessions_app.models import ChatSession

logger = logging.getLogger("nexus.idempotency")

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
KEY_PATTERN = re.compile(r"[\x21-\x7e]{1,255}")
#: Answer headers kept with the body (the session an OpenAI answer names).
KEPT_HEADER_PREFIX = "x-nexus-"
#: A write without a model call holds its claim only inside its own transaction.
QUICK_LEASE_SECONDS = 60

#: The header as the schema shows it on every endpoint that takes it.
KEY_PARAM = OpenApiParameter(
    HEADER,
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    required=False,
    description=(
        "1-255 visible ASCII characters, unique per write: a retry with the same key, method, path and body "
        "gets the first answer back (Idempotent-Replayed: true) instead of writing again; the same key with "
        "another request answers 422, a key still being answered 409 with Retry-After."
    ),
)

T = TypeVar("T")
Handler = Callable[..., HttpResponseBase]


class IdempotencyKeyReused(APIException):
    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    default_detail = (
        "This Idempotency-Key was already used for a different request (method, path or body). "
        "Use a new key for a new request."
    )
    default_code = "idempotency_key_reused"


class IdempotencyKeyInUse(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = (
        "A request with this Idempotency-Key is still being answered; "
        "send it again shortly to get its answer."
    )
    default_code = "idempotency_key_in_use"
    wait = IN_USE_RETRY_AFTER  # DRF sends it as Retry-After


def request_key(request: Request) -> str | None:
    """The request's key; a 400 naming the header when it is malformed."""
    key = request.headers.get(HEADER)
    if key is None:
        return None
    if not KEY_PATTERN.fullmatch(key):
        raise ValidationError({HEADER: ["Must be 1 to 255 visible ASCII characters."]})
    return key


def claim_for(request: Request, key: str, *, lease_seconds: float) -> Claim | Answer:
    fingerprint = request_fingerprint(
        request.method or "", request.get_full_path(), request.body, accept=request.headers.get("Accept", "")
    )
    try:
        return key_claim(user=request.user, key=key, fingerprint=fingerprint, lease_seconds=lease_seconds)
    except KeyReused:
        raise IdempotencyKeyReused() from None
    except KeyInUse:
        raise IdempotencyKeyInUse() from None


def replay(answer: Answer) -> HttpResponse:
    response = HttpResponse(answer.body, status=answer.status, content_type=answer.content_type)
    for name, value in answer.headers.items():
        response[name] = value
    response[REPLAYED_HEADER] = "true"
    return response


def kept_headers(response: HttpResponseBase) -> dict[str, str]:
    return {name: value for name, value in response.items() if name.lower().startswith(KEPT_HEADER_PREFIX)}


def rendered_answer(
    view: Any, request: Request, response: HttpResponseBase, *args: Any, **kwargs: Any
) -> Answer:
    """The answer as it will go out: finalized and rendered as DRF would."""
    response = view.finalize_response(request, response, *args, **kwargs)
    render = getattr(response, "render", None)
    if callable(render):
        render()
    return Answer(
        status=response.status_code,
        content_type=response.get("Content-Type", ""),
        body=bytes(response.content),  # type: ignore[attr-defined]
        headers=kept_headers(response),
    )


def session_named(kwargs: dict[str, Any]) -> Subquery | None:
    """The session the path names, so deleting it deletes the kept answer too:
    read by the statement that keeps the answer (no query of its own)."""
    try:
        parsed = uuid.UUID(str(kwargs.get("uuid")))
    except ValueError:
        return None
    return Subquery(ChatSession.objects.filter(uuid=parsed).order_by().values("pk")[:1])


def is_success(response: HttpResponseBase) -> bool:
    return 200 <= response.status_code < 300


def release_quietly(claim: Claim) -> None:
    try:
        claim.release()
    except DatabaseError:
        # The lease runs out on its own; a retry then takes the key over.
        logger.warning("could not release an idempotency key; it is freed when its lease ends")


def idempotent(*, model_call: bool = False) -> Callable[[Handler], Handler]:
    """Make a view method's writes idempotent by ``Idempotency-Key`` (see the module docstring)."""

    def decorate(handler: Handler) -> Handler:
        @wraps(handler)
        def wrapper(view: Any, request: Request, *args: Any, **kwargs: Any) -> HttpResponseBase:
            key = request_key(request)
            if key is None:
                return handler(view, request, *args, **kwargs)
            if model_call:
                return _model_call(handler, view, request, key, args, kwargs)
            return _quick_write(handler, view, request, key, args, kwargs)

        return wrapper

    return decorate


def _quick_write(
    handler: Handler, view: Any, request: Request, key: str, args: tuple, kwargs: dict
) -> HttpResponseBase:
    # Claim, write and answer commit together: a key is never done without
    # its write, and on PostgreSQL a concurrent duplicate waits here for it.
    with atomic_write(request):
        claim = claim_for(request, key, lease_seconds=QUICK_LEASE_SECONDS)
        if isinstance(claim, Answer):
            return replay(claim)
        response = handler(view, request, *args, **kwargs)
        if is_success(response) and not response.streaming:
            answer = rendered_answer(view, request, response, *args, **kwargs)
            claim.finish(answer, session_pk=session_named(kwargs))
            return response
        claim.release()
        return response


def _model_call(
    handler: Handler, view: Any, request: Request, key: str, args: tuple, kwargs: dict
) -> HttpResponseBase:
    # The claim commits on its own: no transaction may stay open across a model call.
    claim = claim_for(request, key, lease_seconds=chat_lease_seconds())
    if isinstance(claim, Answer):
        return replay(claim)
    request.idempotency = claim  # type: ignore[attr-defined]  # read by store_hook
    try:
        response = handler(view, request, *args, **kwargs)
    except KeyLost:
        raise IdempotencyKeyInUse() from None
    except BaseException:
        release_quietly(claim)
        raise
    if claim.finished:
        return response
    if not is_success(response):
        release_quietly(claim)
    elif response.streaming:
        content = response.streaming_content  # type: ignore[attr-defined]
        response.streaming_content = _released_unless_kept(content, claim)  # type: ignore[attr-defined]
    else:
        with atomic_write(request):
            claim.finish(rendered_answer(view, request, response, *args, **kwargs))
    return response


def _released_unless_kept(content: Iterator[bytes], claim: Claim) -> Iterator[bytes]:
    """A stream whose turn failed or was abandoned frees its key for a retry."""
    try:
        yield from content
    finally:
        if not claim.finished:
            release_quietly(claim)


def store_hook(
    request: Request, render: Callable[[T], Answer], *, session_pk: int | None
) -> Callable[[T], None]:
    """What a chat turn runs inside the transaction that stores its episode.

    With a key: keep ``render(result)`` as the key's answer (``KeyLost`` if
    the claim was taken over). Without: ``ClientGone`` when the client has
    closed its connection, so nothing is stored for nobody.
    """
    claim: Claim | None = getattr(request, "idempotency", None)

    def hook(result: T) -> None:
        if claim is None:
            if client_gone(request):
                raise ClientGone
            return
        claim.finish(render(result), session_pk=session_pk)

    return hook
