"""The caller's own memory as a whole: erase it, export it.

``POST /api/me/erase/`` with ``{"confirm": "<username>"}`` erases every
session the caller stored (``summaries.erasure``); ``GET /api/me/export/``
streams it as JSON lines (``summaries.transfer``), the format
``import_transcript`` reads.

An export that fails is never mistaken for a whole one: the first line is
read before the answer starts, so a failure there (the database gone) is an
ordinary JSON error answer (503, ``Retry-After``); a failure after the 200
went out ends the stream with an ``{"type": "error", "detail"}`` line, which
``import_transcript`` refuses.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import permissions, serializers
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from nexus.api.keys.api import NotThroughAnApiKey
from sessions_app.api.validators import end_user_field
from summaries.erasure import user_memory_erase
from summaries.transfer import user_export_lines

NDJSON = "application/x-ndjson"
#: The last line of an export that failed after its answer had started.
EXPORT_CUT = json.dumps(
    {"type": "error", "detail": "The export failed before its end; this file is incomplete. Export again."}
)

logger = logging.getLogger("nexus.export")


def export_body(lines: Iterator[str]) -> Iterator[str]:
    """``lines`` with newlines, the first one read now (a failure there is the
    view's to answer); a failure later ends the body with ``EXPORT_CUT``."""
    first = next(lines, None)

    def body() -> Iterator[str]:
        if first is None:
            return
        yield first + "\n"
        try:
            for line in lines:
                yield line + "\n"
        except Exception:  # noqa: BLE001 - the status line is gone: say it in the body
            logger.exception("export failed after its answer started")
            yield EXPORT_CUT + "\n"

    return body()


class EraseSerializer(serializers.Serializer):
    confirm = serializers.CharField(help_text="The caller's username, to confirm.", trim_whitespace=False)
    end_user = end_user_field(
        help_text="Erase only this end user's sessions and notes (empty: the owner in person's)."
    )

    def validate_confirm(self, value: str) -> str:
        if value != self.context["username"]:
            raise serializers.ValidationError("Give your username to confirm the erasure.")
        return value


ERASED = inline_serializer(
    "Erased",
    {
        "erased": inline_serializer(
            "ErasedCounts",
            {
                name: serializers.IntegerField()
                for name in ("sessions", "episodes", "summaries", "revisions", "notes")
            },
        )
    },
)


class MeEraseView(APIView):
    permission_classes = (permissions.IsAuthenticated, NotThroughAnApiKey)

    @extend_schema(
        request=EraseSerializer,
        responses={200: ERASED, 400: OpenApiResponse(description="`confirm` missing or not the username.")},
        summary="Erase everything the caller stored (the account and its tokens stay)",
    )
    def post(self, request: Request) -> Response:
        serializer = EraseSerializer(data=request.data, context={"username": request.user.get_username()})
        serializer.is_valid(raise_exception=True)
        erased = user_memory_erase(user=request.user, end_user=serializer.validated_data.get("end_user"))
        return Response({"erased": erased.as_dict()})


class AnyAcceptNegotiation(DefaultContentNegotiation):
    """The export is JSON lines whatever the client accepts; errors are JSON."""

    def select_renderer(
        self, request: Request, renderers: list[BaseRenderer], format_suffix: Any = None
    ) -> tuple[BaseRenderer, str]:
        return renderers[0], renderers[0].media_type


class ExportQuerySerializer(serializers.Serializer):
    end_user = end_user_field(
        help_text="Only this end user's sessions and notes (empty: the owner in person's)."
    )


class MeExportView(APIView):
    permission_classes = (permissions.IsAuthenticated, NotThroughAnApiKey)
    content_negotiation_class = AnyAcceptNegotiation

    @extend_schema(
        responses={(200, NDJSON): OpenApiTypes.STR},
        summary="Everything the caller stored, as JSON lines (one header per session, its episodes, "
        "its summaries; the notes)",
        parameters=[
            OpenApiParameter(
                "end_user", OpenApiTypes.STR, description="Only this end user's sessions and notes."
            )
        ],
    )
    def get(self, request: Request) -> StreamingHttpResponse:
        # Checked as the erasure's: a null character, which the database cannot compare, is a 400.
        query = ExportQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        lines = user_export_lines(user=request.user, end_user=query.validated_data.get("end_user"))
        response = StreamingHttpResponse(export_body(lines), content_type=NDJSON)
        response["Content-Disposition"] = 'attachment; filename="nexus-export.jsonl"'
        response["Cache-Control"] = "no-store"
        return response
