"""The admin's usage page (``/admin/usage/``): what summarization costs and saves.

A plain view inside the admin's look (``admin.site.admin_view`` gives the
login redirect, the staff check and no caching) for staff holding
``summaries.view_utilitycall`` (others get 403, as the admin answers a
page its permissions do not open), routed in
``nexus/urls.py`` ahead of ``admin/``, so it needs nothing from the admin
modules of the apps. ``?session=<uuid>`` shows one session.
"""

from __future__ import annotations

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from sessions_app.access import has_staff_permission
from sessions_app.errors import SessionNotFound
from sessions_app.models import ChatSession
from sessions_app.selectors import parse_session_uuid
from summaries.api.usage import VIEW_USAGE
from summaries.usage import usage_report

SESSIONS_SHOWN = 100


def _usage(request: HttpRequest) -> HttpResponse:
    if not has_staff_permission(request.user, VIEW_USAGE):
        raise PermissionDenied
    queryset = ChatSession.objects.all()
    session_uuid = request.GET.get("session", "").strip()
    if session_uuid:
        try:
            queryset = queryset.filter(uuid=parse_session_uuid(session_uuid))
        except SessionNotFound as exc:
            raise Http404(*exc.args) from None
        if not queryset.exists():
            raise Http404("No such session.")
    report = usage_report(queryset=queryset, limit=SESSIONS_SHOWN)
    context = {
        **admin.site.each_context(request),
        "title": "Summarization usage",
        "report": report,
        "totals": report["totals"],
        "one_session": bool(session_uuid),
        "sessions_shown": SESSIONS_SHOWN,
    }
    return TemplateResponse(request, "admin/usage_report.html", context)


usage_admin_view = admin.site.admin_view(_usage)
