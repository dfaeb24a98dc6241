"""``/api/notes/``: the caller's notes about the people they serve.

Everybody reads and changes only their own notes; another owner's note is a
404, as an unknown one. ``?end_user=`` filters as for sessions (absent: every
end user's; present and empty: the owner in person's).
"""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from nexus.api.pagination import SessionPagination
from notes.api.serializers import (
    NoteChangeSerializer,
    NoteFilterSerializer,
    NoteSerializer,
    NoteWriteSerializer,
)
from notes.models import Note
from notes.services import NoteInvalid, note_create, note_delete, note_list, note_update
from sessions_app.access import end_user_written
from sessions_app.errors import SessionNotFound
from sessions_app.selectors import session_for_user

END_USER_PARAM = OpenApiParameter(
    "end_user", OpenApiTypes.STR, description="Only this end user's notes (empty: the owner in person's)."
)
SOURCE_PARAM = OpenApiParameter(
    "source_episode", OpenApiTypes.INT, description="Only the notes this exchange made (by episode id)."
)
NOT_FOUND = "No such note."


def note_for_user(user, note_id: str) -> Note:
    """The caller's own note with this id; ``NotFound`` for any other."""
    if not note_id.isascii() or not note_id.isdigit() or len(note_id) > 18:
        raise NotFound(NOT_FOUND)
    note = Note.objects.of_owner(user).select_related("session").filter(pk=int(note_id)).first()
    if note is None:
        raise NotFound(NOT_FOUND)
    return note


@extend_schema(tags=["notes"])
class NoteListView(generics.ListCreateAPIView):
    serializer_class = NoteSerializer
    pagination_class = SessionPagination

    def get_queryset(self) -> QuerySet[Note]:
        params = self.request.query_params
        query = NoteFilterSerializer(data=params)
        query.is_valid(raise_exception=True)
        notes = note_list(user=self.request.user, end_user=query.validated_data.get("end_user"))
        source = params.get("source_episode")
        if source is not None:
            if not source.isascii() or not source.isdigit() or len(source) > 18:
                raise ValidationError({"source_episode": "An episode id."})
            notes = notes.filter(source_episode_id=int(source))
        return notes.select_related("session").order_by("pk")

    @extend_schema(summary="The caller's notes", parameters=[END_USER_PARAM, SOURCE_PARAM])
    def get(self, request: Request, *args, **kwargs) -> Response:
        return super().get(request, *args, **kwargs)

    @extend_schema(summary="Write a note", request=NoteWriteSerializer, responses={201: NoteSerializer})
    def post(self, request: Request, *args, **kwargs) -> Response:
        serializer = NoteWriteSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        session = None
        if data["session"] is not None:
            try:
                session = session_for_user(request.user, data["session"], change=True)
            except SessionNotFound:
                raise ValidationError({"session": "No such session."}) from None
        try:
            note = note_create(
                owner=request.user,
                kind=data["kind"],
                text=data["text"],
                end_user=end_user_written(request.user, data["end_user"], creating=True),
                session=session,
            )
        except NoteInvalid as exc:
            raise ValidationError({exc.field: str(exc)}) from None
        return Response(NoteSerializer(note).data, status=status.HTTP_201_CREATED)


@extend_schema(tags=["notes"])
class NoteDetailView(APIView):
    serializer_class = NoteSerializer

    @extend_schema(summary="One note", responses={200: NoteSerializer})
    def get(self, request: Request, id: str) -> Response:  # noqa: A002 - the URL's name
        return Response(NoteSerializer(note_for_user(request.user, id)).data)

    @extend_schema(summary="Change a note (it becomes curated)", request=NoteChangeSerializer)
    def patch(self, request: Request, id: str) -> Response:  # noqa: A002
        note = note_for_user(request.user, id)
        serializer = NoteChangeSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            note_update(note=note, **serializer.validated_data)
        except NoteInvalid as exc:
            raise ValidationError({exc.field: str(exc)}) from None
        return Response(NoteSerializer(note).data)

    @extend_schema(summary="Delete a note", responses={204: None})
    def delete(self, request: Request, id: str) -> Response:  # noqa: A002
        note_delete(note=note_for_user(request.user, id))
        return Response(status=status.HTTP_204_NO_CONTENT)
