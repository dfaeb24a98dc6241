"""The caller's own memory as a whole: erase it, export it.

``POST /api/me/erase/`` with ``{"confirm": "<username>"}`` erases every
session the caller stored (``summaries.erasure``); ``GET /api/me/export/``
streams it as JSON lines (``summaries.transfer``), the format
``import_transcript`` reads.
"""

from __future__ import annotations

from typing import Any

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from summaries.erasure import user_memory_erase
from summaries.transfer import user_export_lines

NDJSON = "application/x-ndjson"


class EraseSerializer(serializers.Serializer):
    confirm = serializers.CharField(help_text="The caller's username, to confirm.", trim_whitespace=False)

    def validate_confirm(self, value: str) -> str:
        if value != self.context["username"]:
            raise serializers.ValidationError("Give your username to confirm the erasure.")
        return value


ERASED = inline_serializer(
    "Erased",
    {
        "erased": inline_serializer(
            "ErasedCounts",
            {name: serializers.IntegerField() for name in ("sessions", "episodes", "summaries", "revisions")},
        )
    },
)


class MeEraseView(APIView):
    @extend_schema(
        request=EraseSerializer,
        responses={200: ERASED, 400: OpenApiResponse(description="`confirm` missing or not the username.")},
        summary="Erase everything the caller stored (the account and its tokens stay)",
    )
    def post(self, request: Request) -> Response:
        serializer = EraseSerializer(data=request.data, context={"username": request.user.get_username()})
        serializer.is_valid(raise_exception=True)
        erased = user_memory_erase(user=request.user)
        return Response({"erased": erased.as_dict()})


class AnyAcceptNegotiation(DefaultContentNegotiation):
    """The export is JSON lines whatever the client accepts; errors are JSON."""

    def select_renderer(
        self, request: Request, renderers: list[BaseRenderer], format_suffix: Any = None
    ) -> tuple[BaseRenderer, str]:
        return renderers[0], renderers[0].media_type


class MeExportView(APIView):
    content_negotiation_class = AnyAcceptNegotiation

    @extend_schema(
        responses={(200, NDJSON): OpenApiTypes.STR},
        summary="Everything the caller stored, as JSON lines (one header per session, its episodes, its summaries)",
    )
    def get(self, request: Request) -> StreamingHttpResponse:
        lines = (line + "\n" for line in user_export_lines(user=request.user))
        response = StreamingHttpResponse(lines, content_type=NDJSON)
        response["Content-Disposition"] = 'attachment; filename="nexus-export.jsonl"'
        response["Cache-Control"] = "no-store"
        return response
