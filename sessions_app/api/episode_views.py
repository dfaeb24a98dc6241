"""One exchange of a session, the history as a whole, and writes in OpenAI's
message format: what chat-history interfaces need (read, delete and clear
exchanges; the newest N; a reply filled in after its user message).

``GET, PATCH, DELETE /api/sessions/{uuid}/episodes/{id}/``;
``DELETE /api/sessions/{uuid}/items/newest/`` takes the newest item off; the clear
(``DELETE .../episodes/``), ``?newest=N`` and ``{"messages": [...]}`` are
answered here for ``EpisodeListView``. Deleting leaves nothing behind
(``sessions_app.history``).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from sessions_app.api.serializers import EpisodeSerializer, episode_payload
from sessions_app.api.validators import LimitedTextField
from sessions_app.errors import EpisodeNotFound
from sessions_app.history import episode_delete, episode_in_session, episode_reply_fill, session_history_clear
from sessions_app.messages import MessagesInvalid, messages_write, newest_item_pop
from sessions_app.models import ChatSession, Episode
from sessions_app.querysets import MAX_ID
from sessions_app.selectors import session_for_user

UUID_PARAM = OpenApiParameter(
    "uuid", OpenApiTypes.UUID, OpenApiParameter.PATH, description="The session's uuid."
)
NEWEST_PARAM = OpenApiParameter(
    "newest",
    OpenApiTypes.INT,
    OpenApiParameter.QUERY,
    required=False,
    description="Only the newest N exchanges (1 to API_MAX_PAGE_SIZE), oldest first, in one page.",
)
MESSAGES_WRITE = inline_serializer(
    "EpisodeMessagesWrite",
    {
        "messages": serializers.ListField(
            child=serializers.DictField(), help_text="OpenAI chat messages or items."
        )
    },
)


def episode_id_of(value: str) -> int:
    """The id in the path; a malformed one names nothing (404), as a malformed uuid does."""
    try:
        parsed = int(value)
    except ValueError:
        raise EpisodeNotFound from None
    if not 0 < parsed <= MAX_ID:
        raise EpisodeNotFound
    return parsed


def newest_episodes(request: Request, session: ChatSession) -> Response | None:
    """The answer to ``?newest=N`` (None without it): the newest N, oldest first,
    as one page of the list (no cursors): one range of the ``(session, id)`` index."""
    raw = request.query_params.get("newest")
    if raw is None:
        return None
    limit = settings.API_MAX_PAGE_SIZE
    try:
        count = int(raw)
    except ValueError:
        count = 0
    if not 1 <= count <= limit:
        raise ValidationError({"newest": [f"Must be an integer from 1 to {limit}."]})
    rows = list(Episode.objects.for_session(session.pk).newest_first()[:count])
    rows.reverse()
    return Response({"next": None, "previous": None, "results": EpisodeSerializer(rows, many=True).data})


def write_messages(request: Request, uuid: str) -> Response:
    """``POST .../episodes/`` with ``{"messages": [...]}``: 201 with the
    exchanges written, the one continued first (``sessions_app.messages``)."""
    session = session_for_user(request.user, uuid, change=True)
    extra = set(request.data) - {"messages"}
    if extra:
        raise ValidationError({sorted(extra)[0]: ["Not accepted with messages."]})
    try:
        episodes = messages_write(session=session, messages=request.data["messages"])
    except MessagesInvalid as exc:
        raise ValidationError({exc.name: [str(exc)]}) from exc
    return Response([episode_payload(e) for e in episodes], status=status.HTTP_201_CREATED)


def clear_history(request: Request, uuid: str) -> Response:
    """``DELETE .../episodes/``: every exchange goes, the session stays."""
    session = session_for_user(request.user, uuid, change=True)
    return Response({"deleted": session_history_clear(session=session)})


class ReplySerializer(serializers.Serializer):
    response = LimitedTextField(limit_setting="EPISODE_MAX_CHARS")


@extend_schema(
    tags=["episodes"],
    parameters=[
        UUID_PARAM,
        OpenApiParameter("id", OpenApiTypes.INT, OpenApiParameter.PATH, description="The episode's id."),
    ],
)
class EpisodeDetailView(APIView):
    serializer_class = EpisodeSerializer

    @extend_schema(summary="One exchange", responses={200: EpisodeSerializer})
    def get(self, request: Request, uuid: str, episode_id: str) -> Response:
        session = session_for_user(request.user, uuid)
        episode = episode_in_session(session=session, episode_pk=episode_id_of(episode_id))
        return Response(episode_payload(episode))

    @extend_schema(
        summary="Fill in the reply of an exchange stored without one (once)",
        request=ReplySerializer,
        responses={
            200: EpisodeSerializer,
            409: OpenApiResponse(description="It has its reply already; names `response`."),
        },
    )
    def patch(self, request: Request, uuid: str, episode_id: str) -> Response:
        session = session_for_user(request.user, uuid, change=True)
        pk = episode_id_of(episode_id)
        data: Any = request.data
        if isinstance(data, dict) and (extra := set(data) - {"response"}):
            raise ValidationError({sorted(extra)[0]: ["Only the reply (response) is filled in."]})
        checked = ReplySerializer(data=data)
        checked.is_valid(raise_exception=True)
        episode = episode_reply_fill(
            session=session, episode_pk=pk, response=checked.validated_data["response"]
        )
        return Response(episode_payload(episode))

    @extend_schema(
        summary="Delete an exchange and everything derived from it",
        description=(
            "Its text leaves the full-text index and its vectors; automatic summary rows that covered it "
            "are written again, a curated one is kept and flagged for review."
        ),
        responses={204: None},
    )
    def delete(self, request: Request, uuid: str, episode_id: str) -> Response:
        session = session_for_user(request.user, uuid, change=True)
        episode_delete(session=session, episode_pk=episode_id_of(episode_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema(tags=["episodes"], parameters=[UUID_PARAM])
class NewestItemView(APIView):
    @extend_schema(
        summary="Take the newest item (message or Responses item) off and return it",
        description=(
            "The Agents SDK's `pop_item`, in one transaction: the newest exchange is deleted (with all "
            "derived from it) and its other items are stored again as an exchange. `item` is null when "
            "the session has no exchange."
        ),
        request=None,
        responses={
            200: inline_serializer("NewestItem", {"item": serializers.DictField(allow_null=True)}),
            400: OpenApiResponse(description="The items left could not stand alone; nothing changed."),
        },
    )
    def delete(self, request: Request, uuid: str) -> Response:
        session = session_for_user(request.user, uuid, change=True)
        try:
            item = newest_item_pop(session=session)
        except MessagesInvalid as exc:
            raise ValidationError({"items": [str(exc)]}) from exc
        return Response({"item": item})
