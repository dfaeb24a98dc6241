"""``GET /api/usage/``: summarization cost and savings, for staff with
``summaries.view_utilitycall`` (superusers have it); anyone else gets 403.

``?session=<uuid>`` narrows the report to one session; ``?limit=`` sets how
many sessions are listed (largest history first, default 50, at most 500).
The totals always cover every session in the report.

Per session and in the totals: ``utility_calls`` (every utility-model call,
answered or not), ``failed_calls``, ``dropped_calls`` (answered, dropped as
stale), ``prompt_tokens`` / ``completion_tokens`` (as the model server
reported them), ``utility_duration_ms``, ``episodes``, ``episodes_covered``,
``summary_rows``, ``full_history_tokens``, ``summary_tokens``,
``context_tokens``, ``saved_tokens``, ``savings_ratio``; the totals add
``sessions`` and ``calls_by_kind`` (fresh, update, regenerate, rebuild).
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from sessions_app.access import has_staff_permission
from sessions_app.models import ChatSession
from sessions_app.selectors import session_for_user
from summaries.usage import usage_report

MAX_LIMIT = 500
VIEW_USAGE = "summaries.view_utilitycall"


def _limit(raw: str | None) -> int:
    if raw in (None, ""):
        return 50
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError({"limit": "Must be an integer."}) from None
    if not 0 <= value <= MAX_LIMIT:
        raise ValidationError({"limit": f"Must be between 0 and {MAX_LIMIT}."})
    return value


class ReadsUsage(BasePermission):
    """Staff holding ``summaries.view_utilitycall``: staff status alone is not enough."""

    def has_permission(self, request: Request, view: APIView) -> bool:
        return has_staff_permission(request.user, VIEW_USAGE)


class UsageView(APIView):
    permission_classes = [ReadsUsage]

    @extend_schema(
        parameters=[
            OpenApiParameter("session", OpenApiTypes.UUID, description="Only this session."),
            OpenApiParameter("limit", OpenApiTypes.INT, description="Sessions listed (default 50)."),
        ],
        responses=OpenApiTypes.OBJECT,
        description="Utility-model calls (failed and dropped ones too), tokens sent and received as "
        "the model server reported them, episodes covered and the context's savings over the full "
        "history: totals and per session.",
    )
    def get(self, request: Request) -> Response:
        queryset = ChatSession.objects.all()
        session_uuid = request.query_params.get("session")
        if session_uuid:
            session = session_for_user(request.user, session_uuid)
            queryset = queryset.filter(pk=session.pk)
        return Response(usage_report(queryset=queryset, limit=_limit(request.query_params.get("limit"))))
