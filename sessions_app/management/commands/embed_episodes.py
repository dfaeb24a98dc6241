"""Write the vectors every session's episodes still lack (retrieval by meaning).

New episodes get theirs from a task after the writes; this is for history
stored before vectors existed, or while the broker was down. It works in
this process, session by session, and can be stopped and run again: each
session continues after the position its vectors reach (rows of an older
layout, which the sweep encodes again, included).

``--rebuild`` first drops the vectors a session has, so all of it is encoded
again as an episode is encoded now (``sessions_app.semantic.passages``).
Until it is done, that session's earlier exchanges are found by their words
only; web processes drop what they keep of the session when they restart.
"""

from __future__ import annotations

import uuid as uuid_lib
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from sessions_app import semantic
from sessions_app.models import ChatSession


class Command(BaseCommand):
    help = "Encode the episodes that have no vector yet, in every session (or one)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--session", help="only the session with this uuid")
        parser.add_argument(
            "--rebuild",
            action="store_true",
            help="drop each session's vectors first and encode all its episodes again",
        )

    def handle(self, *args: Any, session: str | None = None, rebuild: bool = False, **options: Any) -> None:
        if not semantic.enabled():
            raise CommandError("CONTEXT_SEMANTIC_CANDIDATES is 0: retrieval by meaning is off.")
        sessions = ChatSession.objects.order_by("pk")
        if session:
            try:
                sessions = sessions.filter(uuid=uuid_lib.UUID(session))
            except ValueError:
                raise CommandError(f"{session!r} is not a session uuid.") from None
            if not sessions.exists():
                raise CommandError(f"No session with uuid {session}.")
        total = 0
        for pk, uuid in sessions.values_list("pk", "uuid").iterator():
            written = semantic.encode_again(pk) if rebuild else semantic.embed_pending(pk, limit=10**9)
            if written:
                self.stdout.write(f"{uuid}: {written} episodes encoded")
            total += written
        self.stdout.write(f"{total} episodes encoded")
