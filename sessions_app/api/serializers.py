"""Session and episode payloads (field names as the README's REST API section lists them)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ObjectDoesNotExist
from django.db.models.manager import BaseManager
from django.utils.dateparse import parse_datetime
from django.utils.timezone import is_aware
from rest_framework import serializers

from nexus.api.pagination import MAX_ID
from sessions_app.api.validators import LimitedTextField, MetadataField, end_user_field
from sessions_app.models import END_USER_MAX_CHARS, ChatSession, Episode, MemoryScope
from sessions_app.shown_metadata import show_metadata
from sessions_app.validation import episode_problems


class SessionSerializer(serializers.ModelSerializer):
    """A session with its stats.

    Reads expect a row from ``with_stats()`` with ``summarization``
    selected, so a list costs one query however many rows it shows.
    """

    id = serializers.UUIDField(source="uuid", read_only=True)
    title = serializers.CharField(max_length=200, required=False, allow_blank=True, trim_whitespace=False)
    metadata = MetadataField()
    end_user = serializers.CharField(
        max_length=END_USER_MAX_CHARS,
        required=False,
        allow_blank=True,
        trim_whitespace=False,
        help_text="The person the session serves, in your own id for them (empty: you in person). "
        "Changeable only while the session has no episodes.",
    )
    memory_scope = serializers.ChoiceField(
        choices=MemoryScope.choices,
        required=False,
        help_text="'session': its own episodes only (default). 'shared': reads from and lends to every "
        "other shared session of the same end_user.",
    )
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
            "end_user",
            "memory_scope",
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


class SessionFilterSerializer(serializers.Serializer):
    """``?end_user=&memory_scope=`` of the session list: absent, all;
    ``end_user`` present and empty, the owner's sessions in person."""

    end_user = end_user_field()
    memory_scope = serializers.ChoiceField(choices=MemoryScope.choices, required=False)


class EpisodeListSerializer(serializers.ListSerializer):
    """Renders the metadata of the whole page at once (``show_metadata``): a
    few queries for the page, not a few per episode."""

    def to_representation(self, data: Any) -> list[Any]:
        return super().to_representation(show_metadata(data.all() if isinstance(data, BaseManager) else data))


class EpisodeSerializer(serializers.Serializer):
    """An episode as read (declared fields: no model introspection per request)."""

    id = serializers.IntegerField(read_only=True)
    position = serializers.IntegerField(
        read_only=True,
        help_text="Its number in its session, from 1 (#12); never reused: a deleted one leaves a gap.",
    )
    user_input = serializers.CharField(read_only=True)
    response = serializers.CharField(read_only=True)
    token_count = serializers.IntegerField(read_only=True)
    # As readers are shown it: references (an offline reply's quotes) rendered as text.
    metadata = MetadataField(read_only=True, source="shown_metadata")
    created_at = serializers.DateTimeField(read_only=True)

    class Meta:
        list_serializer_class = EpisodeListSerializer


class OffsetDateTimeField(serializers.DateTimeField):
    """An ISO 8601 date and time that says its UTC offset: a naive time
    would be read in whatever zone the server runs in."""

    def to_internal_value(self, value: Any) -> Any:
        if isinstance(value, str):
            try:
                parsed = parse_datetime(value)
            except ValueError:  # shaped like a date, but e.g. month 13
                self.fail("invalid", format="ISO 8601")
            if parsed is not None and not is_aware(parsed):
                self.fail("no_offset")
        return super().to_internal_value(value)

    default_error_messages = {
        "no_offset": "Give the UTC offset, e.g. 2023-05-08T14:30:00+02:00 or 2023-05-08T12:30:00Z.",
    }


class EpisodeWriteSerializer(serializers.Serializer):
    """One exchange to store. The token count is always computed by the server;
    ``created_at`` (imported history) defaults to now."""

    user_input = LimitedTextField(limit_setting="EPISODE_MAX_CHARS")
    response = LimitedTextField(limit_setting="EPISODE_MAX_CHARS", allow_blank=True)
    metadata = MetadataField()
    created_at = OffsetDateTimeField(
        required=False,
        help_text="When the exchange happened (ISO 8601 with offset): from 1970, not in the future, not "
        "earlier than the session's latest episode, and not decreasing along a list. Default: now.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        # The fields above state the limits for the schema and word the usual
        # errors; the rule itself is the one every write path applies.
        problems = episode_problems(
            user_input=attrs["user_input"], response=attrs["response"], metadata=attrs.get("metadata")
        )
        if problems:
            raise serializers.ValidationError({name: [problem] for name, problem in problems.items()})
        return attrs


# Single writes are the hot path of every chat client. A DRF serializer
# deep-copies its declared fields on every instance and checks text for
# surrogates one character at a time in Python; for the common, valid input
# the two functions below give the same result for a fraction of the cost.
# Anything else goes through EpisodeWriteSerializer, which words the errors.


def plain_episode_input(data: Any) -> dict[str, Any] | None:
    """``EpisodeWriteSerializer(data=data).validated_data`` when ``data`` is
    plainly valid (strings within the limit that the database can store, a
    metadata object that passes its checks); None when the serializer must judge."""
    if type(data) is not dict or "created_at" in data:
        return None
    user_input, response = data.get("user_input"), data.get("response")
    if type(user_input) is not str or type(response) is not str:
        return None
    metadata = data.get("metadata")
    if "metadata" in data and type(metadata) is not dict:
        return None
    if episode_problems(user_input=user_input, response=response, metadata=metadata):
        return None
    validated: dict[str, Any] = {"user_input": user_input, "response": response}
    if "metadata" in data:
        validated["metadata"] = metadata
    return validated


_CREATED_AT = serializers.DateTimeField(read_only=True)


def episode_payload(episode: Episode) -> dict[str, Any]:
    """``EpisodeSerializer(episode).data``, built directly."""
    return {
        "id": episode.pk,
        "position": episode.position,
        "user_input": episode.user_input,
        "response": episode.response,
        "token_count": episode.token_count,
        "metadata": episode.shown_metadata,
        "created_at": _CREATED_AT.to_representation(episode.created_at),
    }


class EpisodeStatsSerializer(serializers.Serializer):
    episode_count = serializers.IntegerField()
    total_tokens = serializers.IntegerField()
    last_episode_id = serializers.IntegerField(allow_null=True)


class AfterIdSerializer(serializers.Serializer):
    """The ``after_id`` path segment of ``episodes/since/{after_id}/``."""

    after_id = serializers.IntegerField(min_value=0, max_value=MAX_ID)


class SearchQuerySerializer(serializers.Serializer):
    """``?q=&limit=`` of the search endpoints."""

    q = serializers.CharField(
        max_length=1000,
        allow_blank=True,
        trim_whitespace=False,
        help_text="Words to search for (any of them).",
    )
    limit = serializers.IntegerField(
        required=False, default=20, min_value=1, max_value=100, help_text="Results at most (default 20)."
    )


class SearchResultSerializer(serializers.Serializer):
    episode = EpisodeSerializer()
    session = serializers.UUIDField(help_text="The episode's session.")
    snippet = serializers.CharField(help_text="Plain text from the episode (never markup), '…' where cut.")
    highlights = serializers.ListField(
        child=serializers.ListField(child=serializers.IntegerField(min_value=0), min_length=2, max_length=2),
        help_text="[start, end) character offsets of the matched words within the snippet.",
    )
    rank = serializers.FloatField(help_text="BM25 score; higher is better.")


class SearchResultsSerializer(serializers.Serializer):
    results = SearchResultSerializer(many=True)
