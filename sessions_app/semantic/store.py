"""Writing the vectors of a session's episodes that have none yet (or
only rows of an older layout)."""

from __future__ import annotations

import logging

import numpy as np
from django.db import transaction
from django.db.models import Value
from django.db.models.functions import Greatest
from django.utils import timezone

from sessions_app.models import ChatSession, Episode, EpisodeVector
from sessions_app.semantic.encoder import encoder
from sessions_app.semantic.neighbours import forget
from sessions_app.semantic.passages import episode_encoding
from sessions_app.semantic.vectors import spans_to_bytes, to_bytes

logger = logging.getLogger("nexus.semantic")

#: Episodes encoded per batch (one INSERT each): a batch is a fraction of a
#: second of the encoder's time, so a run gives way often.
BATCH = 16


def embed_pending(session_pk: int, *, limit: int = 2000) -> int:
    """Encode the session's episodes past the position its vectors reach
    (``ChatSession.encoded_through_position``), oldest first, at most
    ``limit``; the number written.

    Finding them is one read of the session's row and a range of the
    ``(session, position)`` index. A row already there (a run that raced
    this one, or a row of an older layout: the migration that widened
    passages set every session's reach back to the start) is replaced, so
    a second run at once writes the same rows again and the sweep's
    re-encoding needs nothing else. A session deleted meanwhile ends the
    run, and nothing of it is written. Each batch raises the reach in its
    own transaction (the sweep reads it, ``sessions_app.semantic.backlog``).
    """
    reach = (
        ChatSession.objects.filter(pk=session_pk).values_list("encoded_through_position", flat=True).first()
    )
    written = 0
    while reach is not None and written < limit:
        batch = min(BATCH, limit - written)
        rows = list(
            Episode.objects.filter(session_id=session_pk, position__gt=reach)
            .order_by("position")
            .values_list("pk", "user_input", "response", "token_count", "position")[:batch]
        )
        if not rows:
            break
        encodings = [episode_encoding(user_input, response) for _, user_input, response, _, _ in rows]
        # One call for the batch.
        matrix = encoder().encode([text for encoding in encodings for text in encoding.texts])
        per_episode = np.split(matrix, np.cumsum([len(encoding.texts) for encoding in encodings])[:-1])
        vectors = [
            EpisodeVector(
                episode_id=pk,
                session_id=session_pk,
                token_count=tokens,
                vector=to_bytes(own),
                spans=spans_to_bytes(encoding.spans),
            )
            for (pk, _, _, tokens, _), own, encoding in zip(rows, per_episode, encodings, strict=True)
        ]
        reach = rows[-1][4]
        with transaction.atomic():
            # The session's row lock, as erasure takes it: a delete waits for
            # this insert and then takes the new rows with it. Never lowered:
            # a run that lost a race to another may come second.
            reached = ChatSession.objects.filter(pk=session_pk).update(
                encoded_through_position=Greatest("encoded_through_position", Value(reach)),
                encoding_activity_at=timezone.now(),
            )
            if not reached:
                logger.info("session gone while its episodes were encoded", extra={"session_pk": session_pk})
                break
            EpisodeVector.objects.bulk_create(
                vectors,
                update_conflicts=True,
                unique_fields=["episode_id"],
                update_fields=["vector", "spans", "token_count"],
            )
        written += len(vectors)
    return written


def encode_again(session_pk: int) -> int:
    """Drop the session's vectors and encode all its episodes again, as an
    episode is encoded now (``embed_episodes --rebuild``); the number written.
    Until it is done the session's earlier exchanges are found by their
    words alone; this process forgets what it kept of the session."""
    with transaction.atomic():
        EpisodeVector.objects.filter(session_id=session_pk).delete()
        ChatSession.objects.filter(pk=session_pk).update(encoded_through_position=0)
    forget(session_pk)
    return embed_pending(session_pk, limit=10**9)
