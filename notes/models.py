"""A note Nexus keeps about the person, its revisions, and how far each
session's episodes have been read for notes."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from sessions_app.access import session_confinement
from sessions_app.models import END_USER_MAX_CHARS, ChatSession, Episode, MemoryScope

NOTE_MAX_CHARS = 500


class NoteQuerySet(models.QuerySet):
    def visible_in(self, session: ChatSession) -> NoteQuerySet:
        """The notes a context of ``session`` carries: its own (made while it
        was session-scoped) and, with shared memory, the owner's shared notes
        of the same end user. A session-scoped session reads and lends nothing else."""
        own = models.Q(session_id=session.pk)
        if session.memory_scope == MemoryScope.SHARED:
            person = models.Q(
                owner_id=session.owner_id, end_user=session.end_user, memory_scope=MemoryScope.SHARED
            )
            return self.filter(own | person)
        return self.filter(own)

    def of_owner(self, user, end_user: str | None = None) -> NoteQuerySet:
        """``user``'s own notes; ``end_user`` None: every end user's. A key
        bound to an end user sees that end user's alone."""
        notes = self.filter(session_confinement(user), owner_id=user.pk)
        return notes if end_user is None else notes.filter(end_user=end_user)


class Note(models.Model):
    class Kind(models.TextChoices):
        INSTRUCTION = "instruction", "Instruction"
        PREFERENCE = "preference", "Preference"
        FACT = "fact", "Fact"

    Scope = MemoryScope

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notes")
    # The client's own id for the person served; empty: the owner in person.
    end_user = models.CharField(max_length=END_USER_MAX_CHARS, blank=True, default="")
    memory_scope = models.CharField(max_length=8, choices=MemoryScope.choices, default=MemoryScope.SHARED)
    # Set only for a note of a session-scoped session: it belongs to that session alone.
    session = models.ForeignKey(
        ChatSession, null=True, blank=True, on_delete=models.CASCADE, related_name="notes"
    )
    # Provenance: the exchange the note came from. A note that came only from
    # it goes with it (the episode, or its whole session, deleted); an edit
    # by a person clears it, so the note is then theirs and stays.
    source_episode = models.ForeignKey(
        Episode, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    kind = models.CharField(max_length=12, choices=Kind.choices)
    text = models.TextField()
    # A single-valued subject ("name", "home"): a later statement of it
    # replaces the note instead of adding another (notes.rules).
    slot = models.CharField(max_length=40, blank=True, default="")
    # Written or edited by a person: extraction never changes it.
    curated = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = NoteQuerySet.as_manager()

    class Meta:
        ordering = ["kind", "created_at", "pk"]
        indexes = [
            models.Index(fields=["owner", "end_user", "memory_scope"], name="note_owner_scope_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()}: {self.text[:60]}"


class NoteRevision(models.Model):
    """A note as it was before a change (an edit, or a later statement that
    contradicted it)."""

    class Source(models.TextChoices):
        EXTRACTION = "extraction", "Later statement"
        EDIT = "edit", "Edit"

    note = models.ForeignKey(Note, on_delete=models.CASCADE, related_name="revisions")
    source = models.CharField(max_length=12, choices=Source.choices)
    kind = models.CharField(max_length=12, choices=Note.Kind.choices)
    text = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.note} before the {self.get_source_display().lower()}"


class NoteCursor(models.Model):
    """The newest episode of a session already read for notes: extraction
    reads only what came after it, so a repeated task finds nothing twice."""

    session = models.OneToOneField(
        ChatSession, on_delete=models.CASCADE, primary_key=True, related_name="note_cursor"
    )
    through_episode_id = models.BigIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)
