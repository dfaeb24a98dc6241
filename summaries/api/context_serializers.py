"""The request and answer shapes of the context and chat-turn endpoints
(``summaries.api.context_views``), declared for validation and the schema."""

from __future__ import annotations

from django.conf import settings
from rest_framework import serializers

from sessions_app.api.serializers import EpisodeSerializer
from sessions_app.api.validators import AskedAtField, text_field

BUDGET_MIN = 1
BUDGET_MAX = 1_000_000


class ContextQuerySerializer(serializers.Serializer):
    question = serializers.CharField(
        required=False,
        default="",
        allow_blank=True,
        help_text="The question the next reply answers; empty shows the context alone.",
    )
    budget = serializers.IntegerField(
        required=False,
        min_value=BUDGET_MIN,
        max_value=BUDGET_MAX,
        help_text="Token budget: the oldest summaries, then the digest, are left out to fit it.",
    )
    asked_at = AskedAtField()

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        # Built per instance so the limit follows settings (and test overrides).
        fields["question"] = text_field(
            max_chars=settings.EPISODE_MAX_CHARS,
            allow_blank=True,
            required=False,
            default="",
            help_text=fields["question"].help_text,
        )
        return fields


class OmittedSerializer(serializers.Serializer):
    summaries = serializers.ListField(child=serializers.IntegerField(), help_text="Summary ids.")
    digest = serializers.ListField(child=serializers.IntegerField(), help_text="Episode ids.")
    retrieved = serializers.ListField(
        child=serializers.IntegerField(), help_text="Episode ids ranked above the floor that did not fit."
    )
    below_floor = serializers.ListField(
        child=serializers.IntegerField(), help_text="Episode ids ranked but under the relevance floor."
    )
    recent = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="Episode ids of the recent window over its share of the budget, left to retrieval and not quoted.",
    )
    summaries_before_episode = serializers.IntegerField(
        allow_null=True,
        help_text="Set when the chain is longer than CONTEXT_MAX_SUMMARIES: the rows covering "
        "episodes before this id were left out without being read.",
    )
    notes = serializers.ListField(
        child=serializers.IntegerField(), help_text="Note ids over CONTEXT_NOTES_SHARE of the budget."
    )


class ContextSerializer(serializers.Serializer):
    prompt = serializers.CharField()
    token_count = serializers.IntegerField(help_text="Tokens of the prompt (cl100k_base).")
    full_history_tokens = serializers.IntegerField(
        help_text="What the prompt would cost with every episode in full."
    )
    summaries = serializers.ListField(child=serializers.IntegerField(), help_text="Summary rows used.")
    retrieved = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="Older episodes quoted because they rank highest for the question (a long one by its passages).",
    )
    recent = serializers.ListField(child=serializers.IntegerField(), help_text="Recent episodes (passages).")
    digest = serializers.ListField(
        child=serializers.IntegerField(), help_text="Episodes no summary covers yet, quoted by the digest."
    )
    notes = serializers.ListField(
        child=serializers.IntegerField(), help_text="Notes about the person it carries, after the question."
    )
    positions = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="Episode id (of retrieved, recent and digest) -> its position in the session (#12).",
    )
    passages = serializers.DictField(
        child=serializers.ListField(child=serializers.ListField(child=serializers.IntegerField())),
        help_text="Episode id (retrieved, or the newest over its share) -> [start, end) in input+response.",
    )
    other_sessions = serializers.DictField(
        child=serializers.UUIDField(),
        help_text="Episode id (retrieved from another of the person's shared chats) -> that chat's id.",
    )
    other_summaries = serializers.DictField(
        child=serializers.UUIDField(),
        help_text="Summary row id (of another of the person's shared chats) -> that chat's id.",
    )
    omitted = OmittedSerializer(help_text="What was left out: over the budget, or under the relevance floor.")
    needs_no_memory = serializers.BooleanField(
        help_text="The question needs no memory (thanks, greetings): nothing earlier was offered, "
        "so omitted summaries and digest were left out for that, not for the budget."
    )
    budget = serializers.IntegerField(help_text="The budget applied (CONTEXT_DEFAULT_BUDGET when none was given).")
    within_budget = serializers.BooleanField()


class ChatRequestSerializer(serializers.Serializer):
    message = serializers.CharField()
    budget = serializers.IntegerField(
        required=False, min_value=BUDGET_MIN, max_value=BUDGET_MAX, help_text="Token budget for the context."
    )
    asked_at = AskedAtField()

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        # The message is stored as the episode's user_input: same limit, same checks.
        fields["message"] = text_field(max_chars=settings.EPISODE_MAX_CHARS)
        return fields

    def validate_message(self, value: str) -> str:
        if not value.strip():
            raise serializers.ValidationError("This field may not be blank.")
        return value


class ChatContextSerializer(serializers.Serializer):
    token_count = serializers.IntegerField()
    full_history_tokens = serializers.IntegerField()


class ChatTurnSerializer(serializers.Serializer):
    reply = serializers.CharField()
    episode = EpisodeSerializer()
    context = ChatContextSerializer()


class ChatErrorSerializer(serializers.Serializer):
    detail = serializers.CharField()
    transient = serializers.BooleanField()
