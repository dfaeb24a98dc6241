"""Checks and writes for summary rows whose range a person chooses.

Rows of a session tile its episodes, so a row written by hand must cover
episodes of that session and must not overlap a row that already exists.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from sessions_app.models import ChatSession, Episode
from summaries.curation import summary_create_manual
from summaries.models import Summary


def check_summary_range(*, session: ChatSession, first_episode_id: int, last_episode_id: int) -> None:
    """Raise ``ValidationError`` naming the field when the range is not usable.

    Call while holding the session's row lock so that two writers cannot
    both pass the overlap check.
    """
    if first_episode_id > last_episode_id:
        raise ValidationError({"last_episode_id": "Must not be smaller than first_episode_id."})
    found = set(
        Episode.objects.filter(session_id=session.pk, pk__in={first_episode_id, last_episode_id}).values_list(
            "pk", flat=True
        )
    )
    errors: dict[str, str] = {}
    for field, value in (("first_episode_id", first_episode_id), ("last_episode_id", last_episode_id)):
        if value not in found:
            errors[field] = f"Episode {value} is not an episode of this session."
    if errors:
        raise ValidationError(errors)
    clash = (
        Summary.objects.filter(
            session_id=session.pk,
            first_episode_id__lte=last_episode_id,
            last_episode_id__gte=first_episode_id,
        )
        .order_by("first_episode_id")
        .first()
    )
    if clash is not None:
        message = (
            f"The range {first_episode_id}-{last_episode_id} overlaps summary {clash.pk} "
            f"(episodes {clash.episode_range})."
        )
        raise ValidationError({"first_episode_id": message, "last_episode_id": message})


def summary_create_for_range(
    *, session: ChatSession, content: str, first_episode_id: int, last_episode_id: int, actor=None
) -> Summary:
    """Create a curated row for a range a person chose, after checking it."""
    with transaction.atomic():
        # The session's row lock serialises writers of this session's rows.
        ChatSession.objects.select_for_update().filter(pk=session.pk).values_list("pk", flat=True).get()
        check_summary_range(
            session=session, first_episode_id=first_episode_id, last_episode_id=last_episode_id
        )
        return summary_create_manual(
            session=session,
            content=content,
            first_episode_id=first_episode_id,
            last_episode_id=last_episode_id,
            actor=actor,
        )
