"""API error responses.

DRF already answers its own exceptions and ``Http404``; this handler adds:

- the domain's not-found errors (``nexus.errors.NotFound``, raised by
  services and selectors) as the same 404 DRF gives for ``Http404``;
- a used-up limit (``nexus.errors.LimitReached``) as a 429 with ``Retry-After``;
- work that cannot be handed on right now (``nexus.errors.Unavailable``: the
  broker or the shared store is down) as a 503 with ``Retry-After``;
- a request that needs a confirmation (``nexus.errors.Conflict``) as a 409
  ``{"detail", "field"}``, ``field`` naming what confirms it;
- Django's ``ValidationError`` (raised by services and ``check_*``
  functions) as a 400 whose body names the fields, like a serializer error;
- a body over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` as a JSON 413;
- JSON nested too deeply for the parser as a 400 like any malformed body;
- an unreachable database, or a query that took too long, as a 503 with
  ``Retry-After`` (``nexus.failures``).

Any other exception is left to ``nexus.failures.FailureMiddleware``, which
answers a JSON 500 and logs the traceback.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from nexus.errors import Conflict, LimitReached, NotFound, Unavailable
from nexus.failures import DatabaseFailure, database_failure, log_database_unavailable


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "Request body too large."
    default_code = "payload_too_large"


class LimitExceeded(exceptions.APIException):
    status_code = status.HTTP_429_TOO_MANY_REQUESTS
    default_detail = "Limit reached; try again later."
    default_code = "limit_reached"

    def __init__(self, detail: str, *, wait: int) -> None:
        super().__init__(detail)
        self.wait = wait  # DRF sends it as Retry-After


class ConfirmationNeeded(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The request conflicts with what is stored."
    default_code = "conflict"

    def __init__(self, conflict: Conflict) -> None:
        super().__init__({"detail": conflict.message, "field": conflict.field})


class ServiceUnavailable(exceptions.APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_code = "unavailable"

    def __init__(self, detail: str, *, wait: int) -> None:
        super().__init__(detail)
        self.wait = wait  # DRF sends it as Retry-After


class DatabaseUnavailable(exceptions.APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE

    def __init__(self, failure: DatabaseFailure) -> None:
        super().__init__(failure.detail, failure.code)
        self.wait = failure.retry_after  # DRF sends it as Retry-After


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, NotFound):
        exc = exceptions.NotFound(*exc.args)
    elif isinstance(exc, LimitReached):
        exc = LimitExceeded(exc.message, wait=exc.retry_after)
    elif isinstance(exc, Conflict):
        exc = ConfirmationNeeded(exc)
    elif isinstance(exc, Unavailable):
        exc = ServiceUnavailable(exc.message, wait=exc.retry_after)
    elif isinstance(exc, DjangoValidationError):
        detail: Any = exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        exc = exceptions.ValidationError(detail=detail)
    elif isinstance(exc, RequestDataTooBig):
        exc = PayloadTooLarge()
    elif isinstance(exc, RecursionError):
        exc = exceptions.ParseError("JSON parse error - nested too deeply.")
    elif (failure := database_failure(exc, context.get("request"))) is not None:
        log_database_unavailable(context["request"], exc)
        exc = DatabaseUnavailable(failure)
    return drf_exception_handler(exc, context)
