"""The note extraction task and how it is sent: after every episode write,
from the same after-commit check that sends the summary and encoding tasks
(``summaries.triggers.request_run_now``), so it never runs on the write path."""

from __future__ import annotations

import logging

from celery import shared_task

from nexus.dispatch import dispatch
from summaries.note_extraction import extract_notes

logger = logging.getLogger("nexus.notes")


@shared_task(name="summaries.tasks.extract_notes", acks_late=True)
def extract_session_notes(session_pk: int) -> int:
    """Find notes in the session's new episodes; the number made or changed."""
    return len(extract_notes(session_pk=session_pk).notes)


def queue_note_extraction(session_pk: int) -> None:
    """Send the extraction task; a broker outage is logged, never raised (the
    next write sends it again, and the cursor makes it read what was missed)."""
    try:
        dispatch(extract_session_notes, {"session_pk": session_pk})
    except Exception as exc:  # noqa: BLE001 - kombu raises many kinds for an unreachable broker
        logger.warning("note extraction enqueue failed", extra={"session_pk": session_pk, "error": str(exc)})
