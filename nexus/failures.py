"""What a request answers when something below it fails.

Two kinds of failure, told apart because a client should treat them apart:

- **The database is unreachable or restarting** (``OperationalError`` or
  ``InterfaceError`` from ``django.db``): 503 with ``Retry-After``. The
  request's transaction did not commit, so nothing was stored and the client
  may send it again.
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
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from django.core import signals
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template import loader
from django.views import defaults

from nexus.web import CONTENT_SECURITY_POLICY

# Seconds a client is asked to wait before retrying: about what a database
# restart or a failover takes.
RETRY_AFTER_SECONDS = 5

DATABASE_UNAVAILABLE = "The database is not available right now; nothing was stored. Try again shortly."
SERVER_ERROR = "The server had an error while processing the request."

request_logger = logging.getLogger("django.request")


def is_database_unavailable(exc: BaseException | None) -> bool:
    return isinstance(exc, (OperationalError, InterfaceError))


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
    request_logger.warning(
        "Database unavailable: %s (%s: %s)",
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
    if is_database_unavailable(exc):
        if kind == "openai":
            response: HttpResponse = JsonResponse(
                openai_error_body(DATABASE_UNAVAILABLE, code="database_unavailable"), status=503
            )
        elif kind == "api":
            response = JsonResponse({"detail": DATABASE_UNAVAILABLE}, status=503)
        else:
            # Rendered without the request: its context would query the database.
            response = HttpResponse(loader.render_to_string("503.html"), status=503)
            response["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
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


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """``handler404``: an address no API has answers in that API's shape."""
    kind = api_kind(request)
    if kind == "openai":
        message = f"Unknown address {request.path!r}."
        body = openai_error_body(message, code="not_found", type="invalid_request_error")
        return JsonResponse(body, status=404)
    if kind == "api":
        return JsonResponse({"detail": "Not found."}, status=404)
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest, template_name: str = defaults.ERROR_500_TEMPLATE_NAME) -> HttpResponse:
    """``handler500``: Django has logged the exception already."""
    exc = sys.exc_info()[1]
    response = failure_response(request, exc) if exc is not None else None
    if response is None and api_kind(request) is not None:
        response = failure_response(request, RuntimeError())
    return response or defaults.server_error(request, template_name)
