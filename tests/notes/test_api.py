"""``/api/notes/``, per-end-user erasure and export, and the retention purge:
each caller sees and changes only their own notes, and an end user's
erasure leaves no row of theirs."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from notes.models import Note, NoteRevision
from summaries.context import build_context
from summaries.erasure import expired_sessions_purge
from tests.factories import ChatSessionFactory, EpisodeFactory
from tests.test_erasure import _values_with_marker

pytestmark = pytest.mark.django_db

MARKER = "qzxjvw"  # tests.test_erasure's: a word no stemmer changes


def make(owner, text, end_user="", **fields):
    return Note.objects.create(
        owner=owner, end_user=end_user, kind=fields.pop("kind", "fact"), text=text, **fields
    )


def test_list_filters_by_end_user_and_shows_only_the_callers_notes(api_client, owner, other_user):
    mine = make(owner, "I like tea.")
    alices = make(owner, "Alice likes coffee.", end_user="alice")
    make(other_user, "Not yours.")
    ids = lambda response: [row["id"] for row in response.json()["results"]]  # noqa: E731
    assert ids(api_client.get("/api/notes/")) == [mine.pk, alices.pk]
    assert ids(api_client.get("/api/notes/", {"end_user": ""})) == [mine.pk]
    assert ids(api_client.get("/api/notes/", {"end_user": "alice"})) == [alices.pk]
    row = api_client.get(f"/api/notes/{alices.pk}/").json()
    assert {k: row[k] for k in ("kind", "text", "end_user", "memory_scope", "session", "curated")} == {
        "kind": "fact", "text": "Alice likes coffee.", "end_user": "alice", "memory_scope": "shared",
        "session": None, "curated": False,
    }  # fmt: skip


def test_create_patch_delete(api_client, owner):
    created = api_client.post(
        "/api/notes/", {"kind": "preference", "text": "Short answers.", "end_user": "bo"}, format="json"
    )
    assert created.status_code == 201, created.content
    note_id = created.json()["id"]
    assert created.json()["curated"] is True and created.json()["end_user"] == "bo"

    changed = api_client.patch(f"/api/notes/{note_id}/", {"text": "Very short answers."}, format="json")
    assert changed.status_code == 200 and changed.json()["text"] == "Very short answers."
    assert list(NoteRevision.objects.values_list("text", "source")) == [("Short answers.", "edit")]

    assert api_client.delete(f"/api/notes/{note_id}/").status_code == 204
    assert not Note.objects.exists()
    assert api_client.get(f"/api/notes/{note_id}/").status_code == 404


def test_a_note_written_for_a_session_scoped_session_is_that_sessions_alone(api_client, owner):
    scoped = ChatSessionFactory(owner=owner)
    other = ChatSessionFactory(owner=owner)
    response = api_client.post(
        "/api/notes/",
        {"kind": "instruction", "text": "Answer in Welsh.", "session": str(scoped.uuid)},
        format="json",
    )
    assert response.status_code == 201 and response.json()["session"] == str(scoped.uuid)
    assert "Answer in Welsh." in build_context(session=scoped, question="Hello there").prompt
    assert "Welsh" not in build_context(session=other, question="Hello there").prompt
    shared = ChatSessionFactory(owner=owner, memory_scope="shared")
    assert "Welsh" not in build_context(session=shared, question="Hello there").prompt


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"kind": "mood", "text": "x"}, "kind"),
        ({"kind": "fact", "text": "   "}, "text"),
        ({"kind": "fact", "text": "x" * 501}, "text"),
        ({"kind": "fact", "text": "x", "end_user": "e" * 201}, "end_user"),
        ({"kind": "fact", "text": "x", "session": "not-a-uuid"}, "session"),
        ({"kind": "fact", "text": "x", "session": "7c0c35f4-6a4b-4f39-8a4e-0d7d1b2f9f11"}, "session"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(api_client, body, field):
    response = api_client.post("/api/notes/", body, format="json")
    assert response.status_code == 400 and field in response.json(), response.content


def test_another_owners_note_is_a_404_everywhere(api_client, other_user):
    theirs = make(other_user, "Private.")
    for call in (api_client.get, api_client.delete):
        assert call(f"/api/notes/{theirs.pk}/").status_code == 404
    assert api_client.patch(f"/api/notes/{theirs.pk}/", {"text": "x"}, format="json").status_code == 404
    assert api_client.get("/api/notes/abc/").status_code == 404
    assert Note.objects.get().text == "Private."


def test_per_end_user_erasure_leaves_no_row_of_that_end_user(api_client, owner):
    kept_session = ChatSessionFactory(owner=owner, end_user="carol", memory_scope="shared")
    EpisodeFactory(session=kept_session, user_input="Carol keeps this.", response="Fine.")
    kept = make(owner, "Carol likes jazz.", end_user="carol")
    gone = ChatSessionFactory(owner=owner, end_user=MARKER, memory_scope="shared", title=f"{MARKER} chat")
    episode = EpisodeFactory(session=gone, user_input=f"My {MARKER} question", response=f"About {MARKER}.")
    make(owner, f"I collect {MARKER} stamps.", end_user=MARKER, source_episode=episode)
    make(owner, "Written by hand.", end_user=MARKER, curated=True)
    scoped = ChatSessionFactory(owner=owner, end_user=MARKER)
    make(owner, "Scoped.", end_user=MARKER, memory_scope="session", session=scoped)
    assert _values_with_marker()

    exported = api_client.get("/api/me/export/", {"end_user": MARKER})
    lines = [json.loads(line) for line in b"".join(exported.streaming_content).decode().splitlines()]
    assert [line.get("type", "episode") for line in lines if line.get("type", "episode") != "episode"] == [
        "session",
        "session",
        "note",
        "note",
        "note",
    ]
    assert {line["text"] for line in lines if line.get("type") == "note"} == {
        f"I collect {MARKER} stamps.", "Written by hand.", "Scoped."
    }  # fmt: skip
    assert "Carol" not in json.dumps(lines)

    response = api_client.post("/api/me/erase/", {"confirm": "owner", "end_user": MARKER}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["erased"] == {
        "sessions": 2,
        "episodes": 1,
        "summaries": 0,
        "revisions": 0,
        "notes": 3,
    }
    assert _values_with_marker() == []
    # Another end user of the same account is left as it was.
    assert list(Note.objects.values_list("pk", flat=True)) == [kept.pk]
    assert kept_session.episodes.count() == 1


def test_retention_deletes_the_notes_of_an_end_user_with_no_write(owner):
    old = timezone.now() - timedelta(days=40)
    idle = make(owner, "Idle person's note.", end_user="idle")
    active = make(owner, "Active person's note.", end_user="active")
    Note.objects.filter(pk__in=[idle.pk, active.pk]).update(updated_at=old)
    ChatSessionFactory(owner=owner, end_user="active")  # written today
    erased = expired_sessions_purge(days=30)
    assert erased.notes == 1
    assert list(Note.objects.values_list("pk", flat=True)) == [active.pk]


def test_a_note_of_whitespace_alone_is_refused_on_write_and_on_change(api_client, owner):
    refused = {"text": ["A note needs some text."]}
    written = api_client.post("/api/notes/", {"kind": "fact", "text": " \n\t "}, format="json")
    assert (written.status_code, written.json()) == (400, refused)
    note = api_client.post("/api/notes/", {"kind": "fact", "text": "Tea, no sugar."}, format="json").json()
    changed = api_client.patch(f"/api/notes/{note['id']}/", {"text": "   "}, format="json")
    assert (changed.status_code, changed.json()) == (400, refused)
