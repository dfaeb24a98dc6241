"""``/api/keys/``: list and create your API keys; ``/api/keys/{id}/``: revoke one.

Keys are managed with the account token or a signed-in browser, never with
a key: a key bound to an end user must not mint one that is not
(``NotThroughAnApiKey``).
"""

from __future__ import annotations

from typing import Any

from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import permissions, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from nexus.api.keys import key_of
from nexus.api.keys.models import END_USER_MAX_LENGTH, ApiKey
from nexus.api.keys.services import NAME_MAX_LENGTH, key_create, key_revoke, keys_of


class NotThroughAnApiKey(permissions.BasePermission):
    """Account actions (keys, the account token, erasing or exporting everything)
    take the account token or a signed-in browser: an API key acts on memory only."""

    message = "An API key cannot do this: use the account token or sign in."

    def has_permission(self, request: Request, view: Any) -> bool:
        return key_of(request.user) is None


class KeySerializer(serializers.ModelSerializer):
    class Meta:
        model = ApiKey
        fields = ["id", "name", "shown", "end_user", "created_at", "last_used_at", "expires_at"]
        read_only_fields = fields


class KeyCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=NAME_MAX_LENGTH, help_text="Which integration uses the key.")
    end_user = serializers.CharField(
        max_length=END_USER_MAX_LENGTH,
        required=False,
        allow_blank=True,
        default="",
        help_text="Confine the key to this end user's sessions (empty: every session of yours).",
    )
    expires_at = serializers.DateTimeField(required=False, allow_null=True, default=None)


class CreatedKeySerializer(KeySerializer):
    key = serializers.CharField(help_text="The key itself: shown this once, never again.")

    class Meta(KeySerializer.Meta):
        fields = [*KeySerializer.Meta.fields, "key"]
        read_only_fields = fields


ACCOUNT_ONLY = (permissions.IsAuthenticated, NotThroughAnApiKey)


@extend_schema(tags=["keys"])
class KeyListView(APIView):
    permission_classes = ACCOUNT_ONLY

    @extend_schema(
        summary="List your API keys (never the keys themselves)", responses={200: KeySerializer(many=True)}
    )
    def get(self, request: Request) -> Response:
        return Response(KeySerializer(keys_of(request.user), many=True).data)

    @extend_schema(
        summary="Create an API key: the answer's `key` is shown this once",
        request=KeyCreateSerializer,
        responses={201: CreatedKeySerializer},
    )
    def post(self, request: Request) -> Response:
        given = KeyCreateSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        key, secret = key_create(user=request.user, **given.validated_data)
        key.key = secret
        return Response(CreatedKeySerializer(key).data, status=status.HTTP_201_CREATED)


@extend_schema(tags=["keys"])
class KeyDetailView(APIView):
    permission_classes = ACCOUNT_ONLY

    @extend_schema(
        summary="Revoke an API key (every process refuses it at once)",
        responses={204: None, 404: OpenApiResponse(description="No key of yours with this id.")},
    )
    def delete(self, request: Request, id: str) -> Response:
        if not (id.isascii() and id.isdigit()) or len(id) > 18:
            raise Http404("No such key.")
        key = keys_of(request.user).filter(pk=int(id)).first()
        if key is None:
            raise Http404("No such key.")
        key_revoke(key=key)
        return Response(status=status.HTTP_204_NO_CONTENT)
