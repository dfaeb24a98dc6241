"""How a note looks on the API."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from notes.models import NOTE_MAX_CHARS, Note
from sessions_app.api.validators import end_user_field


class NoteSerializer(serializers.ModelSerializer):
    session = serializers.SerializerMethodField(
        help_text="The session it belongs to alone (session-scoped), or null."
    )
    source_episode = serializers.IntegerField(
        source="source_episode_id", read_only=True, allow_null=True, help_text="The exchange it came from."
    )

    class Meta:
        model = Note
        fields = [
            "id", "kind", "text", "end_user", "memory_scope", "session", "source_episode", "curated",
            "created_at", "updated_at",
        ]  # fmt: skip
        read_only_fields = fields

    def get_session(self, note: Note) -> str | None:
        return str(note.session.uuid) if note.session_id else None


def note_text(**kwargs: Any) -> serializers.CharField:
    """A note's text: at most ``NOTE_MAX_CHARS``, and more than whitespace (the
    field trims it, then refuses what is left blank)."""
    return serializers.CharField(
        max_length=NOTE_MAX_CHARS, error_messages={"blank": "A note needs some text."}, **kwargs
    )


class NoteWriteSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=Note.Kind.choices)
    text = note_text()
    end_user = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    session = serializers.UUIDField(
        required=False, allow_null=True, default=None,
        help_text="A session-scoped session the note belongs to alone; a shared one: its end user's notes.",
    )  # fmt: skip


class NoteFilterSerializer(serializers.Serializer):
    """``?end_user=`` of the note list: absent, all; present and empty, the owner's in person."""

    end_user = end_user_field()


class NoteChangeSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=Note.Kind.choices, required=False)
    text = note_text(required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError({"text": "Give a new text or kind."})
        return attrs
