"""The search endpoints: one session's episodes, or those of every session the caller may see.

Views parse and check access; ranking and snippets are ``sessions_app.session_search``'s
(one session, ranked as its context ranks) and ``sessions_app.search``'s (every session).
A session the caller may not see is a 404 like an unknown one; a query with
nothing to search for is a 400 naming ``q``.

Each also takes ``POST`` with ``{"q", "limit"}`` as a JSON body, same answer:
a query of 1,000 characters outside ASCII is up to 12,000 bytes
percent-encoded, more than any request line a server takes (gunicorn's
``limit_request_line`` is 4,094 bytes, and at most 8,190).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from sessions_app.api.serializers import SearchQuerySerializer, SearchResultsSerializer, episode_payload
from sessions_app.api.views import UUID_PARAM
from sessions_app.search import EmptyQuery
from sessions_app.search.results import Found, search_visible
from sessions_app.selectors import session_for_user
from sessions_app.session_search import search_session
from sessions_app.shown_metadata import show_metadata

BAD_QUERY = OpenApiResponse(
    description="Bad `q` (empty, only stop words, too long) or `limit`; names the field."
)


def search_query(request: Request) -> dict[str, Any]:
    """``q`` and ``limit``: from the query string of a GET, the JSON body of a POST."""
    data = request.query_params if request.method == "GET" else request.data
    if not hasattr(data, "get"):
        raise ValidationError({"non_field_errors": ["Send a JSON object with 'q' (and 'limit')."]})
    checked = SearchQuerySerializer(data=data)
    checked.is_valid(raise_exception=True)
    return checked.validated_data


def results_payload(found: list[Found]) -> dict[str, Any]:
    show_metadata([item.episode for item in found])  # the page's metadata at once
    return {
        "results": [
            {
                "episode": episode_payload(item.episode),
                "session": str(item.session_uuid),
                "snippet": item.snippet.text,
                "highlights": [list(span) for span in item.snippet.highlights],
                "rank": item.rank,
            }
            for item in found
        ]
    }


def empty_query_error(error: EmptyQuery) -> ValidationError:
    return ValidationError({"q": [str(error)]})


@extend_schema(tags=["search"], parameters=[UUID_PARAM])
class SessionSearchView(APIView):
    @extend_schema(
        summary="Full-text search of one session's episodes, best first",
        parameters=[SearchQuerySerializer],
        responses={200: SearchResultsSerializer, 400: BAD_QUERY},
    )
    def get(self, request: Request, uuid: str) -> Response:
        session = session_for_user(request.user, uuid)
        query = search_query(request)
        try:
            found = search_session(session=session, text=query["q"], limit=query["limit"])
        except EmptyQuery as error:
            raise empty_query_error(error) from None
        return Response(results_payload(found))

    @extend_schema(
        summary="The same search, its query in a JSON body (for a query too long for a URL)",
        request=SearchQuerySerializer,
        responses={200: SearchResultsSerializer, 400: BAD_QUERY},
    )
    def post(self, request: Request, uuid: str) -> Response:
        return self.get(request, uuid)


@extend_schema(tags=["search"])
class SearchView(APIView):
    @extend_schema(
        summary="Full-text search of the episodes of every session you can see, best first",
        parameters=[SearchQuerySerializer],
        responses={200: SearchResultsSerializer, 400: BAD_QUERY},
    )
    def get(self, request: Request) -> Response:
        query = search_query(request)
        try:
            found = search_visible(user=request.user, text=query["q"], limit=query["limit"])
        except EmptyQuery as error:
            raise empty_query_error(error) from None
        return Response(results_payload(found))

    @extend_schema(
        summary="The same search, its query in a JSON body (for a query too long for a URL)",
        request=SearchQuerySerializer,
        responses={200: SearchResultsSerializer, 400: BAD_QUERY},
    )
    def post(self, request: Request) -> Response:
        return self.get(request)
