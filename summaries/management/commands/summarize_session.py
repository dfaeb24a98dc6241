"""Summarize one session now, in this process (optionally rebuilding its chain)."""

from __future__ import annotations

import uuid
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from sessions_app.models import ChatSession
from summaries.inference import InferenceError
from summaries.runner import RunOutcome, rebuild_chain, run_session
from summaries.selectors import summarization_status
from summaries.tasks import queue_rest


class Command(BaseCommand):
    help = "Summarize the session with this uuid now (forced past the gate); --rebuild refolds its chain."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("session_uuid")
        parser.add_argument(
            "--rebuild",
            action="store_true",
            help="Keep curated rows, fold everything else again so the rows tile.",
        )

    def handle(self, *args: Any, session_uuid: str, rebuild: bool, **options: Any) -> None:
        try:
            session = ChatSession.objects.get(uuid=uuid.UUID(session_uuid))
        except (ValueError, ChatSession.DoesNotExist):
            raise CommandError(f"No session with uuid {session_uuid!r}.") from None
        owner = f"command-{uuid.uuid4()}"
        try:
            if rebuild:
                result = rebuild_chain(session_pk=session.pk, owner=owner)
            else:
                result = run_session(session_pk=session.pk, owner=owner, force=True)
        except InferenceError as exc:
            raise CommandError(f"The model call failed: {exc}") from exc
        queue_rest(result)  # a run that stopped at MAX_PASSES_PER_RUN leaves the rest to a task
        if result.outcome is RunOutcome.BUSY:
            raise CommandError("Another run holds this session right now; try again shortly.")
        status = summarization_status(session, viewer=None)  # the operator sees the whole error
        self.stdout.write(
            f"{result.calls} model call(s); state {status['state']}, "
            f"{status['pending_episodes']} episode(s) not yet summarized."
        )
