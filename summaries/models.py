"""Summary rows, their revisions, each session's summarization state, and
one record per utility-model call."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from sessions_app.access import has_staff_permission, session_confinement
from sessions_app.labels import exchanges_label
from sessions_app.models import ChatSession, Episode

VIEW_SUMMARIES = "summaries.view_summary"
CHANGE_SUMMARIES = "summaries.change_summary"


class SummaryQuerySet(models.QuerySet):
    def chain(self, session_pk: int) -> SummaryQuerySet:
        """A session's summary rows, oldest range first."""
        return self.filter(session_id=session_pk).order_by("first_episode_id", "pk")

    def latest_for(self, session_pk: int) -> Summary | None:
        return self.filter(session_id=session_pk).order_by("-last_episode_id", "-pk").first()

    def visible_to(self, user) -> SummaryQuerySet:
        """Rows ``user`` may read: those of their own sessions, or every row
        for staff with ``view_summary`` (or ``change_summary``)."""
        return self._scoped(user, VIEW_SUMMARIES, CHANGE_SUMMARIES)

    def changeable_by(self, user) -> SummaryQuerySet:
        """Rows ``user`` may change (curate, regenerate): their own sessions',
        or every row for staff with ``change_summary``."""
        return self._scoped(user, CHANGE_SUMMARIES)

    def _scoped(self, user, *perms: str) -> SummaryQuerySet:
        if not user.is_authenticated:
            return self.none()
        if has_staff_permission(user, *perms):
            return self
        return self.filter(session_confinement(user, "session__"), session__owner=user)


class Summary(models.Model):
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="summaries")
    content = models.TextField()
    token_count = models.PositiveIntegerField(default=0)
    # Ids of the first and last episode folded into this row. Rows of one
    # session tile its episodes: in order, no overlap, no gap.
    first_episode_id = models.BigIntegerField()
    last_episode_id = models.BigIntegerField()
    # The same range as people read it: the positions of its first and last
    # episodes in the session (``Episode.position``), written with the ids
    # (``cover``), so a list of rows names them without reading episodes.
    first_position = models.PositiveIntegerField(default=0, editable=False)
    last_position = models.PositiveIntegerField(default=0, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    # Provenance of the last automatic write.
    model = models.CharField(max_length=200, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    duration_ms = models.PositiveIntegerField(default=0)
    # Characters cut from single episodes longer than SUMMARY_MAX_CHARS.
    truncated_chars = models.PositiveIntegerField(default=0)

    # Staff-curated rows are never rewritten by automatic passes.
    curated = models.BooleanField(default=False)
    curated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # The text was written by a regeneration that replaced a curated one,
    # asked for as such (the curated text is kept as a revision); cleared
    # when a person's text is back (an edit, a restore).
    replaced_curation = models.BooleanField(default=False)
    # Set when an exchange this curated row covers was deleted: the person's
    # text may still say what it said (``summaries.forgetting``). Empty: no
    # review needed; an edit of the text clears it.
    review_note = models.TextField(blank=True, default="", db_default="")

    objects = SummaryQuerySet.as_manager()

    class Meta:
        ordering = ["session", "first_episode_id", "pk"]
        verbose_name_plural = "summaries"
        indexes = [
            models.Index(fields=["session", "last_episode_id"], name="summary_session_last_idx"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(first_episode_id__lte=models.F("last_episode_id")),
                name="summary_range_ordered",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.exchanges} of “{self.session}”"

    @property
    def episode_range(self) -> str:
        return f"{self.first_episode_id}-{self.last_episode_id}"

    @property
    def exchanges(self) -> str:
        """The range as people read it: ``Exchanges 5–12`` (``Exchange 5`` for one)."""
        return exchanges_label(self.first_position, self.last_position)

    def cover(self, *, first_episode_id: int, last_episode_id: int) -> None:
        """Set the row's range (not saved), its positions read from the episodes (one query)."""
        self.first_episode_id, self.last_episode_id = first_episode_id, last_episode_id
        self.first_position, self.last_position = Episode.objects.range_positions(
            self.session_id, first_episode_id, last_episode_id
        )


class SummaryRevision(models.Model):
    """The state of a summary row before a change, so every change can be
    traced and undone."""

    class Source(models.TextChoices):
        AUTOMATIC = "automatic", "Automatic update"
        STAFF_EDIT = "staff_edit", "Staff edit"
        API_EDIT = "api_edit", "API edit"
        REGENERATE = "regenerate", "Regeneration"
        REBUILD = "rebuild", "Rebuild"
        RESTORE = "restore", "Restore"

    summary = models.ForeignKey(Summary, on_delete=models.CASCADE, related_name="revisions")
    source = models.CharField(max_length=20, choices=Source.choices)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    content = models.TextField()
    token_count = models.PositiveIntegerField(default=0)
    first_episode_id = models.BigIntegerField()
    last_episode_id = models.BigIntegerField()
    # The range's positions as the row had them (``Summary.first_position``).
    first_position = models.PositiveIntegerField(default=0, editable=False)
    last_position = models.PositiveIntegerField(default=0, editable=False)
    curated = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.summary} before the {self.get_source_display().lower()}"

    @property
    def exchanges(self) -> str:
        """The range it had, as people read it (``Summary.exchanges``)."""
        return exchanges_label(self.first_position, self.last_position)


class SummarizationState(models.Model):
    """Per-session summarization state, readable in one cheap query.

    ``lease_owner``/``lease_expires_at`` make sure at most one run per
    session is active across workers; ``rerun_requested`` records triggers
    that arrive during a run so the run re-checks the gate when it ends.
    """

    class State(models.TextChoices):
        IDLE = "idle", "Idle"
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        FAILED = "failed", "Failed"

    session = models.OneToOneField(
        ChatSession, on_delete=models.CASCADE, primary_key=True, related_name="summarization"
    )
    state = models.CharField(max_length=10, choices=State.choices, default=State.IDLE)
    last_error = models.TextField(blank=True)
    failed_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)
    lease_owner = models.CharField(max_length=255, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    rerun_requested = models.BooleanField(default=False)
    # How far the summaries reach: the highest last_episode_id of the chain
    # and how many episodes lie at or below it, kept by every write to the
    # chain in its transaction (summaries.coverage), so the gate and
    # summary-status subtract counters instead of counting the tail.
    covered_through = models.BigIntegerField(default=0)
    covered_episodes = models.PositiveIntegerField(default=0)
    # Set when a run found the owner at UTILITY_CALLS_PER_USER_HOUR: the
    # session stays idle with its work pending, and neither the write path's
    # gate nor the sweep sends it again before this time (summaries.model_cap).
    deferred_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["state"], name="summ_state_idx")]

    def __str__(self) -> str:
        return f"{self.get_state_display()} (“{self.session}”)"


class UtilityCall(models.Model):
    """One call to the utility model, whatever came of it: the cost record.

    Written by the runner right after the model answers or fails, in its own
    short write (never inside the transaction that stores a summary), so a
    failed call, a call folded into a row that later calls updated again, and
    an answer dropped as stale are all counted. A call whose worker died
    mid-request leaves no record: nobody saw what it cost.
    """

    class Kind(models.TextChoices):
        FRESH = "fresh", "Fresh summary"
        UPDATE = "update", "Cumulative update"
        REGENERATE = "regenerate", "Regeneration"
        REBUILD = "rebuild", "Rebuild"
        NOTES = "notes", "Notes about the person"

    class Outcome(models.TextChoices):
        OK = "ok", "Answered"
        TRANSIENT_ERROR = "transient_error", "Transient error"
        PERMANENT_ERROR = "permanent_error", "Permanent error"
        # Answered, but the rows or the lease changed while it ran: not stored.
        DROPPED_STALE = "dropped_stale", "Answered, dropped as stale"

    FAILED = (Outcome.TRANSIENT_ERROR, Outcome.PERMANENT_ERROR)

    # Null once the session is erased: the cost record stays (usage totals
    # keep counting it), the link to what the user stored does not.
    session = models.ForeignKey(
        ChatSession, null=True, blank=True, on_delete=models.SET_NULL, related_name="utility_calls"
    )
    # The row the answer went into, once stored. Null: failed or dropped; or
    # answered but not stored because a later call of the same regeneration
    # or rebuild failed; or the row was deleted since.
    summary = models.ForeignKey(
        Summary, null=True, blank=True, on_delete=models.SET_NULL, related_name="utility_calls"
    )
    kind = models.CharField(max_length=20, choices=Kind.choices)
    model = models.CharField(max_length=200, blank=True)
    # As the model server reported them (the client counts when it reports none);
    # zero for a failed call, which reports nothing.
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    duration_ms = models.PositiveIntegerField(default=0)
    outcome = models.CharField(max_length=20, choices=Outcome.choices)
    # The episodes the prompt carried.
    first_episode_id = models.BigIntegerField()
    last_episode_id = models.BigIntegerField()
    # Whose UTILITY_CALLS_PER_USER_HOUR the call counts against: the person
    # who asked for a regeneration, a rebuild or a summary now, else the
    # session's owner. Null for the offline backend's digests (no model was
    # called) and once that user is deleted. Kept when the session is erased,
    # so erasing does not reset the count. Indexed below, with the time.
    charged_to = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [
            models.Index(fields=["session", "created_at"], name="utilitycall_session_time_idx"),
            # The cap reads a user's calls of the last hour, newest first.
            models.Index(fields=["charged_to", "created_at"], name="utilitycall_charged_time_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.episode_range}: {self.get_outcome_display()}"

    @property
    def episode_range(self) -> str:
        return f"{self.first_episode_id}-{self.last_episode_id}"


class ChatCall(models.Model):
    """One call to the chat model (a chat turn on the web, the API or
    ``/v1/chat/completions``), recorded as the call is made, answered or not.

    With ``UtilityCall`` it is what UTILITY_CALLS_PER_USER_HOUR counts. The
    offline backend's replies call no model and leave none.
    """

    # Who asked: the cap counts against them. Null once the user is deleted.
    # Indexed below, with the time.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,
    )
    # Null once the session is erased; the record stays, like a utility call's.
    session = models.ForeignKey(
        ChatSession, null=True, blank=True, on_delete=models.SET_NULL, related_name="chat_calls"
    )
    model = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["user", "created_at"], name="chatcall_user_time_idx")]

    def __str__(self) -> str:
        return f"Chat call {self.pk} ({self.model})"


class SummaryIndex(models.Model):
    """A summary row's passages as a question is compared with them: the
    words of each and its vector (``summaries.summary_index``), so a row
    that answers the question can compete for the context's budget with the
    exchanges retrieval finds (``summaries.context.summary_ranking``).
    Written after the row changes; ``digest`` names the text it was made
    from, so an index older than its row is never read as the row's."""

    summary = models.OneToOneField(Summary, on_delete=models.CASCADE, primary_key=True, related_name="index")
    digest = models.CharField(max_length=40)
    # One list of terms per passage (summary_index.passage_terms), in order.
    words = models.JSONField(default=list)
    # One vector per passage, stored as episodes' are (sessions_app.semantic.vectors);
    # empty with retrieval by meaning off.
    vectors = models.BinaryField(default=b"")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"Index of {self.summary}"
