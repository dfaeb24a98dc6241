"""Extraction with a model backend, against the fake model server: what the
model lists is stored (good), a reply that is not what was asked for stores
nothing (junk), a later statement updates a note keeping a revision
(contradiction), a curated note is never changed, and the calls count
against UTILITY_CALLS_PER_USER_HOUR."""

from __future__ import annotations

import json

import pytest

from notes.models import Note, NoteCursor, NoteRevision
from summaries.context import build_context
from summaries.models import UtilityCall
from tests.factories import ChatSessionFactory, UtilityCallFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def shared(owner, model, settings):
    settings.SUMMARY_THRESHOLD_TOKENS = 10**9  # only the notes call the model here
    settings.UTILITY_MODEL = "fake-utility"
    return ChatSessionFactory(owner=owner, end_user="alice", memory_scope="shared")


def note_calls(model) -> list[dict]:
    return [r for r in model.requests if "Known notes:" in json.dumps(r["body"])]


def test_good_reply_stores_each_note_charged_to_the_owner(shared, model, owner, write):
    model.set_mode(
        "ok",
        answers=[
            json.dumps([
                {"kind": "instruction", "text": "Always include version numbers for dependencies."},
                {"kind": "preference", "text": "I prefer short answers.", "replaces": None},
            ])
        ],
    )  # fmt: skip
    episode = write(
        shared,
        "Always include version numbers for dependencies. I prefer short answers. How do I pin requests?",
        "Use requests==2.32.3 in requirements.txt.",
    )
    notes = list(Note.objects.order_by("pk").values_list("kind", "text", "source_episode_id", "end_user"))
    assert notes == [
        ("instruction", "Always include version numbers for dependencies.", episode.pk, "alice"),
        ("preference", "I prefer short answers.", episode.pk, "alice"),
    ]
    [call] = note_calls(model)
    prompt = call["body"]["messages"][-1]["content"]
    assert "User: Always include version numbers for dependencies." in prompt
    assert "Known notes:\n(none)" in prompt
    record = UtilityCall.objects.get(kind="notes")
    assert (record.charged_to_id, record.outcome, record.first_episode_id) == (owner.pk, "ok", episode.pk)
    # A shared note: every shared session of the same person carries it; another end user's does not.
    later = ChatSessionFactory(owner=owner, end_user="alice", memory_scope="shared")
    assert "- Always include version numbers" in build_context(session=later, question="Install flask").prompt
    stranger = ChatSessionFactory(owner=owner, end_user="bob", memory_scope="shared")
    assert "version numbers" not in build_context(session=stranger, question="Install flask").prompt


@pytest.mark.parametrize(
    "answer",
    [
        "Sure! The user likes short answers.",
        "[{broken json",
        json.dumps({"kind": "fact", "text": "I am allergic to nuts."}),
        json.dumps([{"kind": "mood", "text": "I am happy."}, {"kind": "fact", "text": ""}, "a string"]),
        json.dumps([{"kind": "fact", "text": "x" * 600}]),
        # Words the user never said: the model's own invention.
        json.dumps([{"kind": "fact", "text": "The user owns a sailing yacht in Monaco."}]),
    ],
)
def test_junk_stores_nothing(shared, model, write, answer):
    model.set_mode("ok", answers=[answer])
    episode = write(
        shared, "I am allergic to nuts, by the way. What should I cook tonight?", "Try a risotto."
    )
    assert len(note_calls(model)) == 1
    assert not Note.objects.exists()
    # Answered: those episodes are read and not asked about again.
    assert NoteCursor.objects.get(session=shared).through_episode_id == episode.pk


def test_a_contradiction_updates_the_note_keeping_the_old_text(shared, model, write):
    model.set_mode("ok", answers=[json.dumps([{"kind": "fact", "text": "I live in Paris."}])])
    write(shared, "I live in Paris.", "Lovely city.")
    note = Note.objects.get()
    model.set_mode(
        "ok", answers=[json.dumps([{"kind": "fact", "text": "I moved to Berlin.", "replaces": note.pk}])]
    )
    second = write(shared, "I moved to Berlin last month.", "Congratulations.")
    prompt = note_calls(model)[-1]["body"]["messages"][-1]["content"]
    assert f"[{note.pk}] fact: I live in Paris." in prompt  # the model sees what it may replace
    note.refresh_from_db()
    assert (note.text, note.source_episode_id) == ("I moved to Berlin.", second.pk)
    assert list(NoteRevision.objects.values_list("text", "source")) == [("I live in Paris.", "extraction")]
    assert Note.objects.count() == 1


def test_a_curated_note_is_never_changed(shared, model, owner, write):
    note = Note.objects.create(
        owner=owner, end_user="alice", kind="fact", text="I live in Paris.", curated=True
    )
    model.set_mode(
        "ok", answers=[json.dumps([{"kind": "fact", "text": "I moved to Berlin.", "replaces": note.pk}])]
    )
    write(shared, "I moved to Berlin last month.", "Congratulations.")
    note.refresh_from_db()
    assert note.text == "I live in Paris."
    assert not NoteRevision.objects.exists()


def test_at_the_model_call_cap_no_call_is_made_and_the_episodes_wait(shared, model, owner, write, settings):
    settings.UTILITY_CALLS_PER_USER_HOUR = 1
    UtilityCallFactory(charged_to=owner, session=shared)
    model.set_mode("ok", answers=[json.dumps([{"kind": "fact", "text": "I live in Paris."}])])
    write(shared, "I live in Paris.", "Lovely city.")
    assert note_calls(model) == []
    assert not Note.objects.exists()
    assert not NoteCursor.objects.filter(session=shared).exists()
