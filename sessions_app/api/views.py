"""Session and episode endpoints.

Views parse, check access and call services/selectors. A session is found
through ``session_for_user`` (``change=True`` for writes; a single episode
write runs the same check inside its write statement), so another user's
uuid is a 404, like an unknown or malformed one, unless a staff permission
grants it (``sessions_app.access``).
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
)
from rest_framework import generics, status
from rest_framework.authtoken.models import Token
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.exceptions import NotAuthenticated, PermissionDenied, Throttled, ValidationError
from rest_framework.parsers import FormParser, JSONParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from nexus.api.keys.api import NotThroughAnApiKey
from nexus.api.pagination import SessionPagination
from nexus.api.throttling import AnonThrottle, UserThrottle
from nexus.login_limit import login_succeeded, login_wait
from sessions_app.access import end_user_written
from sessions_app.api.episode_views import (
    MESSAGES_WRITE,
    NEWEST_PARAM,
    UUID_PARAM,
    clear_history,
    newest_episodes,
    write_messages,
)
from sessions_app.api.idempotency import KEY_PARAM, idempotent
from sessions_app.api.pagination import EpisodeCursorPagination
from sessions_app.api.serializers import (
    AfterIdSerializer,
    EpisodeSerializer,
    EpisodeStatsSerializer,
    EpisodeWriteSerializer,
    SessionFilterSerializer,
    SessionSerializer,
    episode_payload,
    plain_episode_input,
)
from sessions_app.errors import EndUserLocked, EpisodeDateInvalid
from sessions_app.models import ChatSession, Episode, MemoryScope
from sessions_app.selectors import session_for_user
from sessions_app.services import (
    episode_create_for_user,
    episodes_bulk_create,
    session_create,
    session_delete,
    session_update,
)
from sessions_app.validation import batch_problem, text_problem


def sessions_with_stats() -> QuerySet[ChatSession]:
    """Sessions with their stats and summarization state, in one query."""
    return ChatSession.objects.with_stats().select_related("summarization")


class AuthTokenView(ObtainAuthToken):
    """``POST /api/auth/token/``: a token for a username and password."""

    throttle_classes = [AnonThrottle, UserThrottle]
    parser_classes = [JSONParser, FormParser]

    @extend_schema(tags=["auth"], summary="Get an API token for a username and password", auth=[])
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        # Failed logins are counted by nexus.login_limit's receiver of user_login_failed.
        data = request.data if isinstance(request.data, dict) else {}
        username = str(data.get("username", ""))
        # Before it is counted or looked up: text no database holds (a NUL,
        # a lone surrogate) would fail there as a server error.
        if problem := text_problem(username):
            raise ValidationError({"username": [problem]})
        wait = login_wait(request, username)
        if wait is not None:
            raise Throttled(wait)
        response = super().post(request, *args, **kwargs)
        login_succeeded(request, username)
        return response

    @extend_schema(
        tags=["auth"],
        summary="Revoke your API token (every process refuses it at once)",
        responses={204: None},
    )
    def delete(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        if not request.user.is_authenticated:
            raise NotAuthenticated()
        if not NotThroughAnApiKey().has_permission(request, self):
            raise PermissionDenied(NotThroughAnApiKey.message)
        Token.objects.filter(user=request.user).delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema(tags=["sessions"])
class SessionListView(generics.ListCreateAPIView):
    serializer_class = SessionSerializer
    pagination_class = SessionPagination

    def get_queryset(self) -> QuerySet[ChatSession]:
        sessions = sessions_with_stats().visible_to(self.request.user)
        filters = SessionFilterSerializer(data=self.request.query_params)
        filters.is_valid(raise_exception=True)
        return sessions.filter(**filters.validated_data)

    @extend_schema(
        summary="List the sessions you can see, most recently active first, with stats",
        parameters=[SessionFilterSerializer],
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    @extend_schema(summary="Create a session", parameters=[KEY_PARAM], responses={201: SessionSerializer})
    @idempotent()
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        created = session_create(
            owner=request.user,
            title=serializer.validated_data.get("title", ""),
            metadata=serializer.validated_data.get("metadata"),
            end_user=serializer.validated_data.get("end_user", ""),
            # An application serving many people opts in: nothing crosses between them by default.
            memory_scope=serializer.validated_data.get("memory_scope", MemoryScope.SESSION),
        )
        session = session_for_user(request.user, created.uuid, queryset=sessions_with_stats())
        return Response(self.get_serializer(session).data, status=status.HTTP_201_CREATED)


@extend_schema(tags=["sessions"], parameters=[UUID_PARAM])
class SessionDetailView(APIView):
    serializer_class = SessionSerializer

    @extend_schema(summary="One session with stats", responses={200: SessionSerializer})
    def get(self, request: Request, uuid: str) -> Response:
        session = session_for_user(request.user, uuid, queryset=sessions_with_stats())
        return Response(SessionSerializer(session).data)

    @extend_schema(
        summary="Change a session's title, metadata, memory_scope, or end_user (while it has no episodes)",
        request=SessionSerializer,
        responses={200: SessionSerializer},
    )
    def patch(self, request: Request, uuid: str) -> Response:
        # Read once, with the stats: a new title or metadata leaves them as they are,
        # and session_update sets the changed fields on this instance.
        session = session_for_user(request.user, uuid, queryset=sessions_with_stats(), change=True)
        serializer = SessionSerializer(session, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        end_user_written(request.user, serializer.validated_data.get("end_user"), creating=False)
        try:
            session_update(session=session, **serializer.validated_data)
        except EndUserLocked as err:
            raise ValidationError({"end_user": [str(err)]}) from None
        return Response(SessionSerializer(session).data)

    @extend_schema(summary="Delete a session and everything in it", responses={204: None})
    def delete(self, request: Request, uuid: str) -> Response:
        session_delete(session=session_for_user(request.user, uuid, change=True))
        return Response(status=status.HTTP_204_NO_CONTENT)


EPISODE_WRITE = PolymorphicProxySerializer(
    component_name="EpisodeWriteOneOrMany",
    serializers=[EpisodeWriteSerializer, EpisodeWriteSerializer(many=True), MESSAGES_WRITE],
    resource_type_field_name=None,
    many=False,
)
EPISODE_WRITTEN = PolymorphicProxySerializer(
    component_name="EpisodeOneOrMany",
    serializers=[EpisodeSerializer, EpisodeSerializer(many=True)],
    resource_type_field_name=None,
    many=False,
)


@extend_schema(tags=["episodes"], parameters=[UUID_PARAM])
class EpisodeListView(generics.ListAPIView):
    serializer_class = EpisodeSerializer
    pagination_class = EpisodeCursorPagination

    def get_queryset(self) -> QuerySet[Episode]:
        session = session_for_user(self.request.user, self.kwargs["uuid"])
        return Episode.objects.for_session(session.pk)

    @extend_schema(
        summary="A session's episodes, oldest first (cursor pagination)", parameters=[NEWEST_PARAM]
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        if "newest" in request.query_params:
            return newest_episodes(request, session_for_user(request.user, kwargs["uuid"]))
        return super().get(request, *args, **kwargs)

    @extend_schema(
        summary="Delete every exchange of the session (the session stays)",
        operation_id="api_sessions_episodes_clear",
        responses={200: OpenApiResponse(description='{"deleted": <exchanges deleted>}')},
    )
    def delete(self, request: Request, uuid: str) -> Response:
        return clear_history(request, uuid)

    @extend_schema(
        summary="Add one episode, or a list of them in one all-or-nothing transaction",
        description=(
            "A JSON object stores one episode; a JSON array stores up to API_BULK_MAX_EPISODES "
            "episodes at once. For an array, a 400 lists the errors by position: an object keyed by "
            "the index of each invalid item. The token count is computed by the server. "
            '`{"messages": [...]}` (OpenAI messages or Responses items) is paired into exchanges.'
        ),
        request=EPISODE_WRITE,
        parameters=[KEY_PARAM],
        responses={
            201: EPISODE_WRITTEN,
            400: OpenApiResponse(description="Invalid input; names the fields."),
        },
    )
    @idempotent()
    def post(self, request: Request, uuid: str) -> Response:
        data = request.data
        if isinstance(data, list):
            return self._post_many(session_for_user(request.user, uuid, change=True), data)
        if isinstance(data, dict) and "messages" in data:
            return write_messages(request, uuid)
        fields = plain_episode_input(data)
        if fields is None:
            serializer = EpisodeWriteSerializer(data=data)
            serializer.is_valid(raise_exception=True)
            fields = serializer.validated_data
        # The session lookup, the visibility check and the write in one
        # statement: this is the hot path of every chat client.
        try:
            episode = episode_create_for_user(user=request.user, session_uuid=uuid, **fields)
        except EpisodeDateInvalid as exc:
            raise ValidationError({"created_at": [str(exc)]}) from exc
        return Response(episode_payload(episode), status=status.HTTP_201_CREATED)

    def _post_many(self, session: ChatSession, data: list[Any]) -> Response:
        problem = batch_problem(len(data))
        if problem:
            raise ValidationError({"non_field_errors": [problem]})
        serializer = EpisodeWriteSerializer(data=data, many=True)
        serializer.is_valid(raise_exception=True)
        try:
            episodes = episodes_bulk_create(session=session, items=serializer.validated_data)
        except EpisodeDateInvalid as exc:
            raise ValidationError({exc.position: {"created_at": [str(exc)]}}) from exc
        return Response(EpisodeSerializer(episodes, many=True).data, status=status.HTTP_201_CREATED)


@extend_schema(
    tags=["episodes"],
    parameters=[
        UUID_PARAM,
        OpenApiParameter(
            "after_id", OpenApiTypes.INT, OpenApiParameter.PATH, description="A non-negative episode id."
        ),
    ],
)
class EpisodeSinceView(generics.ListAPIView):
    serializer_class = EpisodeSerializer
    pagination_class = EpisodeCursorPagination

    def get_queryset(self) -> QuerySet[Episode]:
        session = session_for_user(self.request.user, self.kwargs["uuid"])
        checked = AfterIdSerializer(data={"after_id": self.kwargs["after_id"]})
        checked.is_valid(raise_exception=True)
        return Episode.objects.after(session.pk, checked.validated_data["after_id"])

    @extend_schema(
        summary="The episodes after an id, oldest first (cursor pagination)",
        responses={200: EpisodeSerializer(many=True), 400: OpenApiResponse(description="Bad after_id.")},
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)


@extend_schema(tags=["episodes"], parameters=[UUID_PARAM])
class EpisodeStatsView(APIView):
    @extend_schema(
        summary="Episode count, token total and last id (constant cost)", responses=EpisodeStatsSerializer
    )
    def get(self, request: Request, uuid: str) -> Response:
        session = session_for_user(request.user, uuid)
        return Response(EpisodeStatsSerializer(ChatSession.objects.stats_for(session.pk)).data)
