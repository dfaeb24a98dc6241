"""Content negotiation that answers the usual API call without parsing.

DRF's negotiation builds the query dict and parses the Accept header on
every request. A request with no query string whose Accept header is
missing, ``*/*`` or exactly the first renderer's media type gets that
renderer, as DRF would choose it (the first renderer wins ties); anything
else goes through DRF's own negotiation unchanged.
"""

from __future__ import annotations

from typing import Any

from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request


class PlainAcceptNegotiation(DefaultContentNegotiation):
    def select_renderer(
        self, request: Request, renderers: list[BaseRenderer], format_suffix: Any = None
    ) -> tuple[BaseRenderer, str]:
        if renderers and not format_suffix and not request.META.get("QUERY_STRING"):
            first = renderers[0]
            if request.META.get("HTTP_ACCEPT", "*/*") in ("*/*", first.media_type) and ";" not in first.media_type:
                return first, first.media_type
        return super().select_renderer(request, renderers, format_suffix)
