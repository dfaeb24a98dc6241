"""What a request answers when something below it fails.

Three kinds of failure, told apart because a client should treat them apart:

- **The database is unreachable or restarting** (``OperationalError`` or
  ``InterfaceError`` from ``django.db``): 503 with ``Retry-After``. The
  request's transaction did not commit, so nothing was stored and the client
  may send it again.
- **A query took too long** (the server cancelled it: over the request's
  ``statement_timeout``, ``nexus.statement_timeout``): 503 saying so, with a
  longer ``Retry-After``; asking for less (a shorter query) may help.
- **Anything else unexpected**: 500, with the traceback logged (logger
  ``django.request``, as Django logs it).

Under ``/api/`` the body is DRF's ``{"detail": ...}``, under ``/v1/`` OpenAI's
``{"error": {"message", "type", "param", "code"}}``, so no API client ever
gets an HTML page; the web pages get a plain page of their own for a 503 and
the site's 500 page otherwise.

Three places call in here: DRF's exception handler (``nexus.api.errors``)
and the OpenAI views for exceptions inside an API view, ``FailureMiddleware``
for exceptions any other view raises (in DEBUG too), and ``server_error``
(the project's ``handler500``) for exceptions raised outside views, in
middleware.

An address no API view answers is a 404 in the same shapes, in every mode:
``unknown_api_address`` is the last route under ``/api/`` and ``/v1/``
(Django's ``handler404`` is not used while debugging; its HTML debug page
would be). A wrong method on a known address is the views' own 405, JSON
as well (DRF's, and OpenAI's shape from the ``/v1/`` views).
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core import signals
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect, JsonResponse
from django.template import loader
from django.urls import Resolver404, resolve
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt

from nexus.web import CONTENT_SECURITY_POLICY
from nexus.write_outcome import CommitOutcomeUnknown, write_may_be_stored, writes_watched

# Seconds a client is asked to wait before retrying: about what a database
# restart or a failover takes.
RETRY_AFTER_SECONDS = 5

DATABASE_UNAVAILABLE = "The database is not available right now; nothing was stored. Try again shortly."
# After a write reached the server (nexus.write_outcome): it may be stored, and only a retry by key can tell.
WRITE_MAY_BE_STORED = (
    "The database failed after the write was sent: it may or may not have been stored. Send it again "
    "with the same Idempotency-Key header to have it stored once, or read it back before writing it again."
)
# A query over the limit would most likely be over it again at once: a longer wait.
QUERY_RETRY_AFTER_SECONDS = 30
QUERY_TOO_LONG = (
    "The query took too long and was stopped. Try again later, or ask for less (e.g. fewer words)."
)
SERVER_ERROR = "The server had an error while processing the request."
#: PostgreSQL's SQLSTATE for a statement it cancelled (statement_timeout, or an operator's cancel).
QUERY_CANCELED = "57014"

request_logger = logging.getLogger("django.request")


@dataclass(frozen=True, slots=True)
class DatabaseFailure:
    """What a 503 for a database failure says: its message, its code under
    ``/v1/`` (and ``/api/``'s DRF code), the seconds in ``Retry-After``, and
    how its log line begins."""

    detail: str
    code: str
    retry_after: int
    log: str


UNAVAILABLE = DatabaseFailure(
    DATABASE_UNAVAILABLE, "database_unavailable", RETRY_AFTER_SECONDS, log="Database unavailable"
)
TOO_LONG = DatabaseFailure(
    QUERY_TOO_LONG, "query_timeout", QUERY_RETRY_AFTER_SECONDS, log="Query took too long"
)
MAY_BE_STORED = DatabaseFailure(
    WRITE_MAY_BE_STORED,
    "write_outcome_unknown",
    RETRY_AFTER_SECONDS,
    log="Database failed after a write was sent",
)


def is_query_canceled(exc: BaseException | None) -> bool:
    return isinstance(exc, OperationalError) and getattr(exc.__cause__, "sqlstate", None) == QUERY_CANCELED


def is_database_unavailable(exc: BaseException | None) -> bool:
    """Whether ``exc`` is a database failure that answers 503 (``database_failure`` tells which)."""
    return isinstance(exc, (OperationalError, InterfaceError, CommitOutcomeUnknown))


def database_failure(exc: BaseException | None, request: Any = None) -> DatabaseFailure | None:
    """The 503 for ``exc``: a query the server cancelled, or a database it
    cannot reach (once ``request`` sent a write, or a commit failed: the
    write may be stored); ``None`` for any other exception."""
    if is_query_canceled(exc):
        return TOO_LONG
    if isinstance(exc, CommitOutcomeUnknown):
        return MAY_BE_STORED
    if is_database_unavailable(exc) and write_may_be_stored(request):
        return MAY_BE_STORED
    return UNAVAILABLE if is_database_unavailable(exc) else None


def api_kind(request: HttpRequest) -> str | None:
    """``"openai"`` under /v1/, ``"api"`` under /api/, ``None`` for pages."""
    path = request.path_info
    if path.startswith("/v1/"):
        return "openai"
    if path.startswith("/api/"):
        return "api"
    return None


def openai_error_body(message: str, *, code: str | None, type: str = "server_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": type, "param": None, "code": code}}


def log_database_unavailable(request: HttpRequest, exc: BaseException) -> None:
    failure = database_failure(exc, request) or UNAVAILABLE
    request_logger.warning(
        "%s: %s (%s: %s)",
        failure.log,
        request.path,
        type(exc).__name__,
        exc,
        extra={"status_code": 503},
    )


def log_server_error(request: HttpRequest, exc: BaseException) -> None:
    request_logger.error(
        "Internal Server Error: %s",
        request.path,
        exc_info=(type(exc), exc, exc.__traceback__),
        extra={"status_code": 500},
    )


def failure_response(request: HttpRequest, exc: BaseException) -> HttpResponse | None:
    """The answer for ``exc`` (already logged by the caller), or ``None``
    for a web page's unexpected error, which Django's own handling shows."""
    kind = api_kind(request)
    failure = database_failure(exc, request)
    if failure is not None:
        if kind == "openai":
            body = openai_error_body(failure.detail, code=failure.code)
            response: HttpResponse = JsonResponse(body, status=503)
        elif kind == "api":
            response = JsonResponse({"detail": failure.detail}, status=503)
        else:
            # Rendered without the request: its context would query the database.
            response = HttpResponse(loader.render_to_string("503.html"), status=503)
            response["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
        response["Retry-After"] = str(failure.retry_after)
        return response
    if kind == "openai":
        return JsonResponse(openai_error_body(SERVER_ERROR, code=None), status=500)
    if kind == "api":
        return JsonResponse({"detail": SERVER_ERROR}, status=500)
    return None


class FailureMiddleware:
    """Answers the exceptions views raise; see the module docstring."""

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # A write's 503 must know whether the write reached the server.
        with writes_watched(request):
            return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if is_database_unavailable(exception):
            log_database_unavailable(request, exception)
            return failure_response(request, exception)
        response = failure_response(request, exception)
        if response is not None:
            log_server_error(request, exception)
            # What Django sends for an unhandled exception (error reporters,
            # the test client) still fires though the answer is ours.
            signals.got_request_exception.send(sender=None, request=request)
        return response


def api_not_found(request: HttpRequest, message: str) -> HttpResponse | None:
    """A 404 saying ``message`` in the shape of the API ``request`` is
    under; ``None`` for a web page."""
    kind = api_kind(request)
    if kind == "openai":
        body = openai_error_body(message, code="unknown_url", type="invalid_request_error")
        return JsonResponse(body, status=404)
    if kind == "api":
        return JsonResponse({"detail": message}, status=404)
    return None


@csrf_exempt  # a POST to an unknown address is a 404, not the CSRF failure page
def unknown_api_address(request: HttpRequest) -> HttpResponse:
    """The last route under ``/api/`` and ``/v1/``: no view has this address.

    The route makes the address known to Django, so ``APPEND_SLASH`` no
    longer redirects it; a read of an address that exists with a slash is
    redirected here instead, as Django would, and any other method is told
    the address (a redirect would drop its body).
    """
    path = request.path_info
    where = f"{request.method} {path}"
    message = f"Invalid URL ({where})."
    if not path.endswith("/") and _is_api_view(f"{path}/", request):
        if settings.APPEND_SLASH and request.method in ("GET", "HEAD"):
            return HttpResponsePermanentRedirect(request.get_full_path(force_append_slash=True))
        message = f"Invalid URL ({where}): the address ends with a slash, {path}/."
    return api_not_found(request, message) or defaults.page_not_found(request, Resolver404(path))


def _is_api_view(path: str, request: HttpRequest) -> bool:
    try:
        match = resolve(path, getattr(request, "urlconf", None))
    except Resolver404:
        return False
    return match.func is not unknown_api_address


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """``handler404`` (not used while debugging): a ``Http404`` raised by a
    view that is not DRF's, under an API, answers in its shape."""
    return api_not_found(request, "Not found.") or defaults.page_not_found(request, exception)


def server_error(request: HttpRequest, template_name: str = defaults.ERROR_500_TEMPLATE_NAME) -> HttpResponse:
    """``handler500``: Django has logged the exception already."""
    exc = sys.exc_info()[1]
    response = failure_response(request, exc) if exc is not None else None
    if response is None and api_kind(request) is not None:
        response = failure_response(request, RuntimeError())
    return response or defaults.server_error(request, template_name)
