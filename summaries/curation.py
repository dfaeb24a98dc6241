"""Staff and API edits of summary rows, each kept as a revision, and the
check that keeps a curated text from being replaced unasked.

Every change to a row first stores the row's previous state as a
``SummaryRevision``, so any change can be traced and undone.
"""

from __future__ import annotations

from django.db import transaction

from nexus.errors import Conflict
from sessions_app.models import ChatSession
from sessions_app.tokens import count_tokens
from summaries.coverage import refresh_coverage
from summaries.models import Summary, SummaryRevision

Source = SummaryRevision.Source

#: The name under which a request agrees to replace a curated text.
REPLACE_CURATED = "replace_curated"


class CurationNotConfirmed(Conflict):
    """A regeneration of a curated row that did not say it replaces the curation."""

    def __init__(self, summary: Summary) -> None:
        super().__init__(
            f"Summary {summary.pk} was curated: regenerating it replaces the curated text (kept as a "
            f"revision). Send {REPLACE_CURATED}: true to do so.",
            field=REPLACE_CURATED,
        )


def check_replace_curated(*, summary: Summary, replace_curated: bool) -> None:
    """``CurationNotConfirmed`` when regenerating ``summary`` would replace a
    curated text and the request did not say so."""
    if summary.curated and not replace_curated:
        raise CurationNotConfirmed(summary)


def _person(actor):
    """The user to record as having made a change; None for nobody or an anonymous user."""
    return actor if actor is not None and actor.is_authenticated else None


def record_revision(*, summary: Summary, source: str, actor=None) -> SummaryRevision:
    """Keep ``summary``'s current state before it changes.

    Call inside the transaction that changes the row, after locking it.
    """
    return SummaryRevision.objects.create(
        summary=summary,
        source=source,
        actor=_person(actor),
        content=summary.content,
        token_count=summary.token_count,
        first_episode_id=summary.first_episode_id,
        last_episode_id=summary.last_episode_id,
        first_position=summary.first_position,
        last_position=summary.last_position,
        curated=summary.curated,
    )


def summary_curate(*, summary: Summary, content: str, actor=None, source: str = Source.STAFF_EDIT) -> Summary:
    """Replace a row's text by a person's; the row is then curated and no
    automatic pass rewrites it again (the next pass starts a new row)."""
    with transaction.atomic():
        locked = Summary.objects.select_for_update().get(pk=summary.pk)
        record_revision(summary=locked, source=source, actor=actor)
        locked.content = content
        locked.token_count = count_tokens(content)
        locked.curated = True
        locked.curated_by = _person(actor)
        locked.replaced_curation = False
        locked.review_note = ""  # a person wrote it again: reviewed
        locked.save(
            update_fields=[
                "content", "token_count", "curated", "curated_by", "replaced_curation", "review_note",
                "updated_at",
            ]
        )
    return locked


def summary_create_manual(
    *, session: ChatSession, content: str, first_episode_id: int, last_episode_id: int, actor=None
) -> Summary:
    """A row written by a person (API or admin): curated from the start."""
    with transaction.atomic():
        row = Summary(
            session=session,
            content=content,
            token_count=count_tokens(content),
            curated=True,
            curated_by=_person(actor),
            model="",
        )
        row.cover(first_episode_id=first_episode_id, last_episode_id=last_episode_id)
        row.save(force_insert=True)
        refresh_coverage(session.pk)
    return row


def summary_restore(*, revision: SummaryRevision, actor=None) -> Summary:
    """Put a revision's text and range back; the current state becomes a revision too."""
    with transaction.atomic():
        summary = Summary.objects.select_for_update().get(pk=revision.summary_id)
        record_revision(summary=summary, source=Source.RESTORE, actor=actor)
        summary.content = revision.content
        summary.token_count = revision.token_count
        summary.cover(first_episode_id=revision.first_episode_id, last_episode_id=revision.last_episode_id)
        # A restored text is a person's choice: keep it out of automatic
        # passes, and record whose, as an edit does.
        summary.curated = True
        summary.curated_by = _person(actor)
        summary.replaced_curation = False
        summary.save()
    return summary
