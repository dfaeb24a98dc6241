"""Session and episode payloads (field names as in DESIGN.md's Interfaces)."""

from __future__ import annotations

from django.core.exceptions import ObjectDoesNotExist
from rest_framework import serializers

from sessions_app.api.pagination import MAX_ID
from sessions_app.api.validators import LimitedTextField, MetadataField
from sessions_app.models import ChatSession


class SessionSerializer(serializers.ModelSerializer):
    """A session with its stats.

    Reads expect a row from ``with_stats()`` with ``summarization``
    selected, so a list costs one query however many rows it shows.
    """

    id = serializers.UUIDField(source="uuid", read_only=True)
    title = serializers.CharField(max_length=200, required=False, allow_blank=True, trim_whitespace=False)
    metadata = MetadataField()
    episode_count = serializers.IntegerField(read_only=True)
    total_tokens = serializers.IntegerField(read_only=True)
    last_episode_id = serializers.IntegerField(read_only=True, allow_null=True)
    summary_state = serializers.SerializerMethodField()

    class Meta:
        model = ChatSession
        fields = [
            "id",
            "title",
            "metadata",
            "created_at",
            "updated_at",
            "episode_count",
            "total_tokens",
            "last_episode_id",
            "summary_state",
        ]
        read_only_fields = ["created_at", "updated_at"]

    def get_summary_state(self, obj: ChatSession) -> str:
        try:
            return obj.summarization.state
        except ObjectDoesNotExist:
            # No state row yet: nothing was ever queued for this session.
            return "idle"


class EpisodeSerializer(serializers.Serializer):
    """An episode as read (declared fields: no model introspection per request)."""

    id = serializers.IntegerField(read_only=True)
    user_input = serializers.CharField(read_only=True)
    response = serializers.CharField(read_only=True)
    token_count = serializers.IntegerField(read_only=True)
    metadata = MetadataField(read_only=True)
    created_at = serializers.DateTimeField(read_only=True)


class EpisodeWriteSerializer(serializers.Serializer):
    """One exchange to store. The token count is always computed by the server."""

    user_input = LimitedTextField(limit_setting="EPISODE_MAX_CHARS")
    response = LimitedTextField(limit_setting="EPISODE_MAX_CHARS", allow_blank=True)
    metadata = MetadataField()


class EpisodeStatsSerializer(serializers.Serializer):
    episode_count = serializers.IntegerField()
    total_tokens = serializers.IntegerField()
    last_episode_id = serializers.IntegerField(allow_null=True)


class AfterIdSerializer(serializers.Serializer):
    """The ``after_id`` path segment of ``episodes/since/{after_id}/``."""

    after_id = serializers.IntegerField(min_value=0, max_value=MAX_ID)
