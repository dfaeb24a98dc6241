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


def with_csp(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        response = view(request, *args, **kwargs)
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        return response

    return wrapped


def not_found_as_404(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Answer the domain's not-found errors (``nexus.errors.NotFound``) with the site's 404 page."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except NotFound as exc:
            raise Http404(*exc.args) from None

    return wrapped
