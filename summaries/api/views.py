"""Summary endpoints: the chain of a session, create/read/curate a row,
regenerate a row, summarize a session now, and the summarization state.

A summary is reachable only through a session the caller may see, so
another user's summary id is a 404 like another user's session uuid.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from nexus.api.pagination import MAX_ID, IdCursorPagination
from sessions_app.access import has_staff_permission
from sessions_app.api.views import UUID_PARAM
from sessions_app.errors import SessionNotFound
from sessions_app.models import ChatSession
from sessions_app.selectors import session_for_user
from summaries.api.serializers import (
    SummarizationStatusSerializer,
    SummaryCreateSerializer,
    SummaryRegenerateSerializer,
    SummarySerializer,
    SummaryUpdateSerializer,
)
from summaries.curation import summary_curate
from summaries.models import CHANGE_SUMMARIES, Summary, SummaryRevision
from summaries.ranges import summary_create_for_range
from summaries.selectors import summarization_status
from summaries.triggers import session_summarize_now, summary_regenerate

ID_PARAM = OpenApiParameter("id", OpenApiTypes.INT, OpenApiParameter.PATH, description="The summary's id.")
CAP_REACHED = OpenApiResponse(
    description="The caller is at UTILITY_CALLS_PER_USER_HOUR; nothing was queued (`Retry-After` says when to retry)."
)


def session_for_summary_change(user, session_uuid: str) -> ChatSession:
    """A session whose summaries ``user`` may change: one they may read, and
    their own or any for staff with ``change_summary``; else ``SessionNotFound``."""
    session = session_for_user(user, session_uuid)
    if session.owner_id != user.pk and not has_staff_permission(user, CHANGE_SUMMARIES):
        raise SessionNotFound
    return session


def summary_for_user(user, summary_id: int | str, *, change: bool = False) -> Summary:
    """The row if ``user`` may read it (``change=True``: change it); otherwise 404.

    The id comes from the path as text (an ``<int:>`` route would answer a
    malformed one with the site's HTML 404 page); anything but plain ASCII
    digits names no row.
    """
    text = str(summary_id)
    if not (text.isascii() and text.isdigit()) or int(text) > MAX_ID:
        raise Http404("No such summary.")
    try:
        rows = Summary.objects.changeable_by(user) if change else Summary.objects.visible_to(user)
        return rows.select_related("session").get(pk=int(text))
    except Summary.DoesNotExist:
        raise Http404("No such summary.") from None


class SummaryCursorPagination(IdCursorPagination):
    # Rows of one session never overlap, so the first id orders them uniquely.
    ordering = "first_episode_id"


def _status_response(session_pk: int, viewer: Any, code: int = status.HTTP_200_OK) -> Response:
    return Response(
        SummarizationStatusSerializer(summarization_status(session_pk, viewer=viewer)).data, status=code
    )


@extend_schema(tags=["summaries"], parameters=[UUID_PARAM])
class SessionSummaryListView(generics.ListAPIView):
    serializer_class = SummarySerializer
    pagination_class = SummaryCursorPagination

    def get_queryset(self) -> QuerySet[Summary]:
        session = session_for_user(self.request.user, self.kwargs["uuid"])
        return Summary.objects.visible_to(self.request.user).chain(session.pk).select_related("session")

    @extend_schema(summary="A session's summary rows, oldest range first (cursor pagination)")
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)


@extend_schema(tags=["summaries"])
class SummaryCreateView(APIView):
    @extend_schema(
        summary="Write a summary row by hand (curated from the start)",
        request=SummaryCreateSerializer,
        responses={
            201: SummarySerializer,
            400: OpenApiResponse(description="Invalid input; names the fields."),
        },
    )
    def post(self, request: Request) -> Response:
        serializer = SummaryCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            session = session_for_summary_change(request.user, data["session"])
        except SessionNotFound:
            raise ValidationError({"session": ["No such session."]}) from None
        summary = summary_create_for_range(
            session=session,
            content=data["content"],
            first_episode_id=data["first_episode_id"],
            last_episode_id=data["last_episode_id"],
            actor=request.user,
        )
        return Response(
            SummarySerializer(summary, context={"request": request}).data, status=status.HTTP_201_CREATED
        )


@extend_schema(tags=["summaries"], parameters=[ID_PARAM])
class SummaryDetailView(APIView):
    @extend_schema(summary="One summary row", responses=SummarySerializer)
    def get(self, request: Request, id: str) -> Response:
        return Response(
            SummarySerializer(summary_for_user(request.user, id), context={"request": request}).data
        )

    @extend_schema(
        summary="Replace a row's text (the row becomes curated; the old text is kept as a revision)",
        request=SummaryUpdateSerializer,
        responses={
            200: SummarySerializer,
            400: OpenApiResponse(description="Invalid input; names the fields."),
        },
    )
    def patch(self, request: Request, id: str) -> Response:
        summary = summary_for_user(request.user, id, change=True)
        serializer = SummaryUpdateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        updated = summary_curate(
            summary=summary,
            content=serializer.validated_data["content"],
            actor=request.user,
            source=SummaryRevision.Source.API_EDIT,
        )
        updated.session = summary.session
        return Response(SummarySerializer(updated, context={"request": request}).data)


@extend_schema(tags=["summaries"], parameters=[ID_PARAM])
class SummaryRegenerateView(APIView):
    @extend_schema(
        summary="Queue a new summary of exactly this row's range",
        description=(
            "A curated row is regenerated only when the body says `{\"replace_curated\": true}`; its "
            "curated text is kept as a revision and the row then reads `replaced_curation: true`."
        ),
        request=SummaryRegenerateSerializer,
        responses={
            202: SummarizationStatusSerializer,
            400: OpenApiResponse(description="Invalid input; names the fields."),
            409: OpenApiResponse(
                description="The row is curated and the body did not say `replace_curated: true` "
                "(`{\"detail\", \"field\": \"replace_curated\"}`); nothing was queued."
            ),
            429: CAP_REACHED,
        },
    )
    def post(self, request: Request, id: str) -> Response:
        summary = summary_for_user(request.user, id, change=True)
        serializer = SummaryRegenerateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        summary_regenerate(
            summary=summary, actor=request.user, replace_curated=serializer.validated_data["replace_curated"]
        )
        return _status_response(summary.session_id, request.user, status.HTTP_202_ACCEPTED)


@extend_schema(tags=["summaries"], parameters=[UUID_PARAM])
class SessionSummarizeView(APIView):
    @extend_schema(
        summary="Queue summarization of the session's un-summarized episodes now",
        request=None,
        responses={202: SummarizationStatusSerializer, 429: CAP_REACHED},
    )
    def post(self, request: Request, uuid: str) -> Response:
        session: ChatSession = session_for_summary_change(request.user, uuid)
        session_summarize_now(session=session, actor=request.user)
        return _status_response(session.pk, request.user, status.HTTP_202_ACCEPTED)


@extend_schema(tags=["summaries"], parameters=[UUID_PARAM])
class SummaryStatusView(APIView):
    @extend_schema(summary="The session's summarization state", responses=SummarizationStatusSerializer)
    def get(self, request: Request, uuid: str) -> Response:
        session = session_for_user(request.user, uuid)
        return _status_response(session.pk, request.user)
