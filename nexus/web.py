"""Plumbing the server-rendered pages of every app share."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.http import Http404, HttpRequest, HttpResponse

from nexus.errors import NotFound

# Scripts and styles come only from our own static files; user and model
# text is escaped everywhere it is shown, and this policy is a second fence.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; "
    "frame-ancestors 'none'"
)
# The admin's own templates (Django's change list, ours) carry inline
# <style> blocks and style attributes; scripts stay our own files there too.
ADMIN_CONTENT_SECURITY_POLICY = CONTENT_SECURITY_POLICY.replace(
    "style-src 'self'", "style-src 'self' 'unsafe-inline'"
)
ADMIN_PATH_PREFIX = "/admin/"


def with_csp(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        response = view(request, *args, **kwargs)
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        return response

    return wrapped


class AdminContentSecurityPolicyMiddleware:
    """Sends ``ADMIN_CONTENT_SECURITY_POLICY`` on every admin answer (the
    pages are Django's, so no view decorator reaches them all)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if request.path_info.startswith(ADMIN_PATH_PREFIX):
            response.headers.setdefault("Content-Security-Policy", ADMIN_CONTENT_SECURITY_POLICY)
        return response


def not_found_as_404(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Answer the domain's not-found errors (``nexus.errors.NotFound``) with the site's 404 page."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except NotFound as exc:
            raise Http404(*exc.args) from None

    return wrapped
