"""Chat sessions and their episodes (one user message and the assistant's reply)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from sessions_app.querysets import ChatSessionQuerySet, EpisodeQuerySet
from sessions_app.shown_metadata import ATTRIBUTE, show_metadata

#: The longest ``end_user`` taken: the client's own id for the person a session serves.
END_USER_MAX_CHARS = 200


class MemoryScope(models.TextChoices):
    """What a session's memory reaches. ``session``: its own episodes only,
    and it lends nothing. ``shared``: every shared session of the same owner
    and the same ``end_user`` reads from and lends to the others."""

    SESSION = "session"
    SHARED = "shared"


class ChatSession(models.Model):
    # The integer primary key stays inside (joins, task arguments); the uuid
    # is the only identifier that appears in URLs and API payloads.
    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    # Never changes once the session exists: its episodes carry a copy (``Episode.owner``).
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chat_sessions", editable=False
    )
    title = models.CharField(max_length=200, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    # The person the session serves, in the client's own words (an
    # application serving many people through one account); empty: the
    # owner in person. Changes only while the session holds no episode.
    end_user = models.CharField(max_length=END_USER_MAX_CHARS, blank=True, default="")
    memory_scope = models.CharField(max_length=8, choices=MemoryScope.choices, default=MemoryScope.SESSION)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    # Counters kept by the episode write path in the same transaction as the
    # insert, so the summarization gate never aggregates a whole session.
    # The aggregate (``with_stats``) stays the truth; tests prove they agree.
    cached_episode_count = models.PositiveIntegerField(default=0, editable=False)
    cached_total_tokens = models.PositiveBigIntegerField(default=0, editable=False)
    # The newest episode's id and date, kept the same way: reads never look
    # for the newest episode, and a back-dated import can be checked to
    # come after what the session already holds.
    cached_last_episode_id = models.BigIntegerField(null=True, editable=False)
    cached_last_episode_at = models.DateTimeField(null=True, editable=False)
    # The highest position handed out in this session (0: none yet), raised
    # in the same UPDATE as the counters above. It only grows: a deleted
    # exchange leaves a gap, and no later one takes its number.
    cached_last_position = models.PositiveIntegerField(default=0, editable=False)
    # The position of the newest episode with vectors (0: none), raised by
    # the encoder in the transaction that writes them (vectors are written
    # in id order, so every episode up to it has them). With the counter
    # above it says how many have none, which the sweep finds by the index
    # below (``sessions_app.semantic.backlog``).
    encoded_through_position = models.PositiveIntegerField(default=0, editable=False)
    # When the encoder last wrote this session's vectors or the sweep last
    # sent it the task: what is missing is sent again only once both are old.
    encoding_activity_at = models.DateTimeField(null=True, editable=False)
    # The whole history as one chained hash (``sessions_app.history_fingerprint``),
    # extended by every episode write in the statement that takes the row
    # lock; kept only for sessions the OpenAI endpoint makes (``NULL``
    # otherwise), which find a stateless client's conversation by it.
    history_fingerprint = models.CharField(max_length=64, null=True, blank=True, editable=False)
    # Raised whenever an exchange is deleted or its text changes (a reply
    # filled in): what a process keeps of the session's vectors, read under
    # an older value, is read again (``sessions_app.semantic.neighbours``).
    history_revision = models.PositiveIntegerField(default=0, db_default=0, editable=False)

    objects = ChatSessionQuerySet.as_manager()

    class Meta:
        ordering = ["-updated_at", "-pk"]
        indexes = [
            models.Index(fields=["owner", "-updated_at"], name="session_owner_recent_idx"),
            # A person's sessions of one scope: the shared memory and the list filters look them up.
            models.Index(fields=["owner", "end_user", "memory_scope"], name="session_person_scope_idx"),
            models.Index(
                F("cached_last_position") - F("encoded_through_position"), name="session_unencoded_idx"
            ),
            models.Index(
                fields=["owner", "end_user", "history_fingerprint"],
                condition=Q(history_fingerprint__isnull=False),
                name="session_history_fp_idx",
            ),
        ]

    def __str__(self) -> str:
        return self.title or f"Session {self.uuid}"


class Episode(models.Model):
    # No index of its own: the (session, id) index below serves every lookup
    # by session, in id order.
    session = models.ForeignKey(
        ChatSession, on_delete=models.CASCADE, related_name="episodes", db_index=False
    )
    user_input = models.TextField()
    response = models.TextField()
    token_count = models.PositiveIntegerField(default=0)
    # Now, unless history is imported with its original dates.
    created_at = models.DateTimeField(default=timezone.now)
    metadata = models.JSONField(default=dict, blank=True)
    # Its number in its session, from 1, the one people read (``#12``): given
    # by the write path from ``ChatSession.cached_last_position`` under the
    # session's row lock, so positions follow ids and are never reused.
    position = models.PositiveIntegerField(editable=False)
    # The session's owner, copied by the write path (a session's owner never
    # changes), so the full-text index can answer "this owner's episodes that
    # hold this term" in one lookup, however many sessions the owner has
    # (``sessions_app.search``). No constraint of its own: the episode goes
    # with its session, and the session with its owner.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        related_name="+",
        editable=False,
    )

    objects = EpisodeQuerySet.as_manager()

    class Meta:
        ordering = ["pk"]
        indexes = [
            models.Index(fields=["session", "id"], name="episode_session_id_idx"),
            # The newest episodes of an owner: a search across their sessions reads them first.
            models.Index(fields=["owner", "id"], name="episode_owner_id_idx"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["session", "position"], name="episode_session_position_uniq"),
        ]

    def __str__(self) -> str:
        return f"#{self.position} of “{self.session}”"

    @property
    def shown_metadata(self) -> dict:
        """``metadata`` as readers are shown it, references rendered as text
        (``sessions_app.shown_metadata``); a list renders at once with
        ``show_metadata``."""
        if not hasattr(self, ATTRIBUTE):
            show_metadata([self])
        return getattr(self, ATTRIBUTE)


class EpisodeVector(models.Model):
    """An episode's meaning as unit vectors (``sessions_app.semantic``): the
    whole exchange's, then its passages' (``semantic.vectors`` tells the
    layout), so an earlier exchange can be found by a question that shares
    none of its words.

    Written after the episode, by a task; an episode without one is still
    found by the full-text index. The id is the episode's and no foreign key
    points at it: the session's delete cascades here in one statement, as
    episodes go only with their session.
    """

    episode_id = models.BigIntegerField(primary_key=True)
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="+", db_index=False)
    token_count = models.PositiveIntegerField()
    # Vectors as each one's scale and int8 values (semantic.vectors: the
    # whole exchange's, then one per passage, up to
    # SEMANTIC_PASSAGE_TOKENS_PER_EPISODE of text): a quarter of float32's size.
    vector = models.BinaryField()
    # Each passage vector's [start, end) in user_input + response, int32
    # pairs (semantic.vectors); empty in rows written before they were kept
    # (a database default too, for rows inserted in bulk by SQL).
    spans = models.BinaryField(default=b"", db_default=b"", editable=False)

    class Meta:
        indexes = [models.Index(fields=["session", "episode_id"], name="episode_vector_session_idx")]


class IdempotencyKey(models.Model):
    """A write sent with an ``Idempotency-Key`` header, and the answer it got
    (``sessions_app.idempotency``): a retry with the same key gets that answer
    instead of writing again.

    Keys are the caller's own: unique per user. ``fingerprint`` tells the
    request apart (method, path and body), ``claim`` and ``locked_until`` who
    holds an unfinished one and until when. The answer (status, type, body,
    the headers it needs) is written in the same transaction as the write it
    answers, so a key is never done without its write, nor the write done
    without its key.
    """

    class State(models.TextChoices):
        IN_PROGRESS = "in_progress"
        DONE = "done"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    fingerprint = models.CharField(max_length=64)
    state = models.CharField(max_length=12, choices=State.choices, default=State.IN_PROGRESS)
    claim = models.UUIDField(default=uuid.uuid4)
    locked_until = models.DateTimeField()
    # The session the answer is about, when there is one: deleting it deletes the answer too.
    session = models.ForeignKey(
        ChatSession, on_delete=models.CASCADE, null=True, blank=True, related_name="+", db_index=False
    )
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    content_type = models.CharField(max_length=100, blank=True)
    headers = models.JSONField(default=dict, blank=True)
    body = models.BinaryField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "key"], name="idempotency_key_user_key_uniq")]
        indexes = [
            models.Index(fields=["expires_at"], name="idempotency_key_expires_idx"),
            models.Index(fields=["session"], name="idempotency_key_session_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.key} ({self.state})"
