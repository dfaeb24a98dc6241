"""Summary and summarization-state payloads (field names as the README's REST API section lists them)."""

from __future__ import annotations

from rest_framework import serializers

from nexus.api.pagination import MAX_ID
from sessions_app.api.validators import LimitedTextField
from summaries.models import SummarizationState, Summary


class SummarySerializer(serializers.ModelSerializer):
    """A summary row. Reads expect ``session`` selected with the row."""

    session = serializers.UUIDField(source="session.uuid", read_only=True)
    episode_range = serializers.CharField(
        read_only=True, help_text='"first-last" episode ids, e.g. "259-263".'
    )
    first_position = serializers.IntegerField(
        read_only=True, help_text="Position in the session of the first episode covered (Exchanges 5–12: 5)."
    )
    last_position = serializers.IntegerField(
        read_only=True, help_text="Position in the session of the last episode covered (Exchanges 5–12: 12)."
    )
    curated_by_you = serializers.SerializerMethodField(help_text="The caller curated this row.")
    curated_by_staff = serializers.SerializerMethodField(help_text="Someone else curated this row.")
    replaced_curation = serializers.BooleanField(
        read_only=True,
        help_text="A regeneration asked to replace this row's curated text did (the text is among its "
        "revisions); false again once a person's text is back.",
    )

    needs_review = serializers.SerializerMethodField(
        help_text="An exchange this curated row covers was deleted: its text may still quote it."
    )
    review_note = serializers.CharField(read_only=True, help_text="Why it needs review; empty when it does not.")

    class Meta:
        model = Summary
        fields = [
            "id",
            "session",
            "content",
            "token_count",
            "episode_range",
            "first_episode_id",
            "last_episode_id",
            "first_position",
            "last_position",
            "curated",
            "curated_by_you",
            "curated_by_staff",
            "replaced_curation",
            "needs_review",
            "review_note",
            "model",
            "prompt_tokens",
            "completion_tokens",
            "duration_ms",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def get_needs_review(self, obj: Summary) -> bool:
        return bool(obj.review_note)

    def _caller_pk(self) -> int | None:
        request = self.context.get("request")
        return getattr(getattr(request, "user", None), "pk", None)

    def get_curated_by_you(self, summary: Summary) -> bool:
        return summary.curated_by_id is not None and summary.curated_by_id == self._caller_pk()

    def get_curated_by_staff(self, summary: Summary) -> bool:
        return summary.curated_by_id is not None and summary.curated_by_id != self._caller_pk()


class SummaryCreateSerializer(serializers.Serializer):
    """A row written by a person; the server counts its tokens and marks it curated."""

    session = serializers.UUIDField()
    content = LimitedTextField(limit_setting="SUMMARY_CONTENT_MAX_CHARS")
    first_episode_id = serializers.IntegerField(min_value=1, max_value=MAX_ID)
    last_episode_id = serializers.IntegerField(min_value=1, max_value=MAX_ID)


class SummaryUpdateSerializer(serializers.Serializer):
    """Only the text of a row can be changed; the row then counts as curated."""

    content = LimitedTextField(limit_setting="SUMMARY_CONTENT_MAX_CHARS")


class StrictBooleanField(serializers.BooleanField):
    """``true`` or ``false`` only: DRF's own also takes ``"yes"``, ``1``, ``"on"``..."""

    def to_internal_value(self, data: object) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


class SummaryRegenerateSerializer(serializers.Serializer):
    """The optional body of a regeneration."""

    replace_curated = StrictBooleanField(
        required=False,
        default=False,
        help_text="Regenerate a curated row too, replacing its text (kept as a revision); "
        "without it a curated row answers 409.",
    )


class SummarizationStatusSerializer(serializers.Serializer):
    state = serializers.ChoiceField(choices=SummarizationState.State.choices)
    last_error = serializers.CharField(allow_blank=True)
    updated_at = serializers.DateTimeField(allow_null=True)
    pending_episodes = serializers.IntegerField()
