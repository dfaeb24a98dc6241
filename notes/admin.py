"""Notes in the admin: staff with the model permissions see and edit them;
every change keeps the note as it was (a revision, listed on the note's page)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin

from notes.models import Note, NoteRevision
from notes.services import note_update


class NoteRevisionInline(admin.TabularInline):
    model = NoteRevision
    extra = 0
    can_delete = False
    fields = ("created_at", "source", "kind", "text")
    readonly_fields = fields

    def has_add_permission(self, request: Any, obj: Any = None) -> bool:
        return False


@admin.register(Note)
class NoteAdmin(admin.ModelAdmin):
    list_display = ("text", "kind", "owner", "end_user", "memory_scope", "curated", "updated_at")
    list_filter = ("kind", "memory_scope", "curated")
    list_select_related = ("owner",)
    search_fields = ("text", "end_user", "owner__username")
    fields = ("kind", "text", "owner", "end_user", "memory_scope", "session", "source_episode", "curated",
              "created_at", "updated_at")  # fmt: skip
    readonly_fields = fields[2:]
    inlines = [NoteRevisionInline]

    def has_add_permission(self, request: Any) -> bool:
        # Notes are about a person of an owner: they are written by extraction, the API or the Memory page.
        return False

    def save_model(self, request: Any, obj: Note, form: Any, change: bool) -> None:
        # Through the service: the revision is kept and the note becomes curated.
        original = Note.objects.get(pk=obj.pk)
        obj.text, obj.kind, text, kind = original.text, original.kind, obj.text, obj.kind
        note_update(note=obj, text=text, kind=kind)
