"""The Memory page: what Nexus keeps about the person, to see, edit and delete.

The signed-in user sees their own notes, grouped by the end user they are
about (empty: themselves), each with the chat it belongs to when it is a
session-scoped session's. Edits and deletions go through ``notes.services``,
as the API's do.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from nexus.web import with_csp
from notes.models import NOTE_MAX_CHARS, Note
from notes.services import note_delete, note_update

# The page lists this many notes at most, newest first.
MEMORY_PAGE_LIMIT = 500


class NoteForm(forms.Form):
    kind = forms.ChoiceField(choices=Note.Kind.choices)
    text = forms.CharField(max_length=NOTE_MAX_CHARS, strip=True)


def _own_note(request: HttpRequest, note_id: int) -> Note:
    note = Note.objects.filter(pk=note_id, owner_id=request.user.pk).first()
    if note is None:
        raise Http404("No such note.")
    return note


@with_csp
@login_required
@require_GET
def memory_page(request: HttpRequest) -> HttpResponse:
    notes = list(
        Note.objects.of_owner(request.user)
        .select_related("session")
        .order_by("end_user", "kind", "-updated_at", "-pk")[:MEMORY_PAGE_LIMIT]
    )
    people: dict[str, list[Note]] = {}
    for note in notes:
        people.setdefault(note.end_user, []).append(note)
    return render(
        request,
        "notes/memory.html",
        {"people": sorted(people.items()), "kinds": Note.Kind.choices, "max_chars": NOTE_MAX_CHARS},
    )


@with_csp
@login_required
@require_POST
def note_edit(request: HttpRequest, note_id: int) -> HttpResponse:
    note = _own_note(request, note_id)
    form = NoteForm(request.POST)
    if form.is_valid():
        note_update(note=note, text=form.cleaned_data["text"], kind=form.cleaned_data["kind"])
        messages.success(request, "Note saved.")
    else:
        messages.error(request, f"A note needs a kind and a text of at most {NOTE_MAX_CHARS} characters.")
    return redirect(f"/memory/#note-{note.pk}")


@with_csp
@login_required
@require_POST
def note_remove(request: HttpRequest, note_id: int) -> HttpResponse:
    note_delete(note=_own_note(request, note_id))
    messages.success(request, "Note deleted.")
    return redirect("memory")
