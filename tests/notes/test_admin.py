"""Notes in the admin: a staff edit goes through the service (a revision is
kept, the note becomes curated) and the note's page lists its revisions."""

from __future__ import annotations

import pytest

from notes.models import Note, NoteRevision

pytestmark = pytest.mark.django_db


def test_an_admin_edit_keeps_a_revision_and_curates_the_note(admin_client, owner):
    note = Note.objects.create(owner=owner, kind="fact", text="I live in Paris.")
    page = admin_client.get(f"/admin/notes/note/{note.pk}/change/")
    assert page.status_code == 200
    inline = {f"revisions-{name}": value for name, value in (("TOTAL_FORMS", "0"), ("INITIAL_FORMS", "0"))}
    form = {"kind": "fact", "text": "I live in Lyon.", **inline}
    response = admin_client.post(f"/admin/notes/note/{note.pk}/change/", form)
    assert response.status_code == 302, response.content[:2000]
    note.refresh_from_db()
    assert (note.text, note.curated) == ("I live in Lyon.", True)
    assert list(NoteRevision.objects.values_list("text", "source")) == [("I live in Paris.", "edit")]
    page = admin_client.get(f"/admin/notes/note/{note.pk}/change/")
    assert b"I live in Paris." in page.content  # the revision, listed on the note's page
    assert admin_client.get("/admin/notes/note/").status_code == 200
