"""Writing the vectors of a session's episodes that have none yet."""

from __future__ import annotations

import logging

import numpy as np
from django.db import transaction
from django.db.models import Value
from django.db.models.functions import Greatest
from django.utils import timezone

from sessions_app.models import ChatSession, Episode, EpisodeVector
from sessions_app.semantic.encoder import encoder
from sessions_app.semantic.neighbours import forget, newest_vector_id
from sessions_app.semantic.passages import episode_texts
from sessions_app.semantic.vectors import to_bytes

logger = logging.getLogger("nexus.semantic")

#: Episodes encoded per batch (one INSERT each): a batch is a fraction of a
#: second of the encoder's time, so a run gives way often.
BATCH = 16


def embed_pending(session_pk: int, *, limit: int = 2000) -> int:
    """Encode the session's episodes newer than its newest vector, oldest
    first, at most ``limit``; the number written.

    Vectors are written in id order, so "newer than the newest vector" is
    exactly what is missing, and finding it is one index probe. Two runs at
    once write the same rows; the second's are ignored. A session deleted
    meanwhile ends the run, and nothing of it is written. Each batch raises
    the session's ``encoded_through_position`` in its own transaction (the
    sweep reads it, ``sessions_app.semantic.backlog``).
    """
    written = 0
    while written < limit:
        rows = list(
            Episode.objects.after(session_pk, newest_vector_id(session_pk)).values_list(
                "pk", "user_input", "response", "token_count", "position"
            )[: min(BATCH, limit - written)]
        )
        if not rows:
            break
        texts = [episode_texts(user_input, response) for _, user_input, response, _, _ in rows]
        matrix = encoder().encode([text for episode in texts for text in episode])  # one call for the batch
        per_episode = np.split(matrix, np.cumsum([len(episode) for episode in texts])[:-1])
        vectors = [
            EpisodeVector(episode_id=pk, session_id=session_pk, token_count=tokens, vector=to_bytes(own))
            for (pk, _, _, tokens, _), own in zip(rows, per_episode, strict=True)
        ]
        with transaction.atomic():
            # The session's row lock, as erasure takes it: a delete waits for
            # this insert and then takes the new rows with it. Never lowered:
            # a run that lost a race to another may come second.
            reached = ChatSession.objects.filter(pk=session_pk).update(
                encoded_through_position=Greatest("encoded_through_position", Value(rows[-1][4])),
                encoding_activity_at=timezone.now(),
            )
            if not reached:
                logger.info("session gone while its episodes were encoded", extra={"session_pk": session_pk})
                break
            EpisodeVector.objects.bulk_create(vectors, ignore_conflicts=True)
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
