"""Offline extraction: rules read the user's own sentences after each write,
in the background, and nothing from the assistant, quotes, code or pasted text."""

from __future__ import annotations

import pytest

from notes import rules
from notes.models import Note, NoteRevision
from notes.rules import own_voice, statements
from sessions_app.services import session_delete
from summaries.context import build_context
from tests.factories import ChatSessionFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("message", "kind", "text"),
    [
        ("Always include version numbers when I ask about dependencies.", "instruction",
         "Always include version numbers when I ask about dependencies."),
        ("never use emojis in your answers", "instruction", "Never use emojis in your answers."),
        ("From now on, answer in French please.", "instruction", "From now on, answer in French please."),
        ("Please remember that my daughter is 7.", "fact", "Please remember that my daughter is 7."),
        ("Thanks! I prefer short answers.", "preference", "I prefer short answers."),
        ("I'm allergic to shellfish, so keep that in mind", "fact",
         "I'm allergic to shellfish, so keep that in mind."),
        ("my name is Dana", "fact", "My name is Dana."),
        ("Oh and also, call me Sam.", "fact", "Call me Sam."),
        # A word that may introduce pasted text, in an earlier sentence, cuts nothing after it.
        ("Someone tried logins overnight according to the log. Please never suggest Homebrew: "
         "my laptop can't run it.", "instruction", "Please never suggest Homebrew: my laptop can't run it."),
    ],
)  # fmt: skip
def test_rules_find_the_users_own_statements(message, kind, text):
    assert [(s.kind, s.text) for s in statements(message)] == [(kind, text)]


@pytest.mark.parametrize(
    "message",
    [
        "Should I always pin versions?",
        "If I never reply, what happens?",
        "Translate this: Always be kind and never lie.",
        "Proofread the following email:\n\nHi team, from now on send reports on Fridays.",
        "What does this mean?\n> Never trust user input.\n> Always validate.",
        'My boss said "always cc me on everything" and I am not sure.',
        "Why does this fail?\n```python\n# never call this twice\nalways_run()\n```",
        "Here is the log:\n    never retry on 500\n    always back off",
        "It failed again. Check this output: always retry on 500, never back off.",
        "What is the capital of France?",
    ],
)
def test_rules_take_nothing_from_questions_quotes_code_or_pasted_text(message):
    assert statements(message) == []


@pytest.mark.parametrize(
    ("message", "may"),
    [("What is the capital of France?", False), ("We moved to Lyon last spring.", True), ("I live in Lyon.", True)],
)
def test_the_write_time_check_reduces_a_message_to_its_own_voice_once(monkeypatch, message, may):
    calls = []

    def counted(text):
        calls.append(text)
        return own_voice(text)

    monkeypatch.setattr(rules, "own_voice", counted)
    assert rules.may_state_note(message) is may
    assert calls == [message]


def test_a_write_makes_a_note_in_the_background_and_the_next_context_carries_it(owner, write):
    session = ChatSessionFactory(owner=owner)
    episode = write(
        session,
        "Always include version numbers when I ask about dependencies.",
        "Understood. I will always list versions; never forget them.",
    )
    note = Note.objects.get()
    assert (note.kind, note.text, note.source_episode_id) == (
        "instruction", "Always include version numbers when I ask about dependencies.", episode.pk
    )  # fmt: skip
    assert note.session_id == session.pk and note.memory_scope == "session"  # session-scoped session
    # Nothing from the assistant's words ("never forget them").
    assert Note.objects.count() == 1

    write(session, "What is a lockfile?", "A file of pinned versions.")
    context = build_context(session=session, question="How do I install requests?")
    head = "User Question: How do I install requests?\n\nWhat the user has asked you to keep in mind:\n"
    assert context.prompt.startswith(head + "- Always include version numbers")
    assert context.notes == [note.pk]
    assert context.as_dict()["notes"] == [note.pk]
    assert context.as_dict()["omitted"]["notes"] == []
    assert context.token_count <= context.budget


def test_a_later_statement_of_the_same_subject_updates_the_note_keeping_a_revision(owner, write):
    session = ChatSessionFactory(owner=owner)
    write(session, "My name is Dana.", "Hello Dana.")
    write(session, "Actually, call me Dee.", "Sure.")
    # "Actually, call me Dee." is a statement of the name: the note follows it.
    note = Note.objects.get()
    assert note.text == "Call me Dee."
    assert list(NoteRevision.objects.values_list("text", "source")) == [("My name is Dana.", "extraction")]


def test_a_curated_note_is_never_changed_by_extraction(owner, write):
    session = ChatSessionFactory(owner=owner)
    write(session, "My name is Dana.", "Hello.")
    note = Note.objects.get()
    note.curated = True
    note.save()
    write(session, "Call me Dee.", "Sure.")
    note.refresh_from_db()
    assert note.text == "My name is Dana."
    assert not NoteRevision.objects.exists()


def test_deleting_the_source_session_deletes_its_notes_but_not_a_persons(owner, write):
    session = ChatSessionFactory(owner=owner)
    write(session, "I prefer tea over coffee.", "Noted.")
    assert Note.objects.count() == 1
    session_delete(session=session)
    assert Note.objects.count() == 0


def test_pasted_text_written_to_a_session_makes_no_note(owner, write):
    session = ChatSessionFactory(owner=owner, memory_scope="shared")
    write(
        session,
        "Can you proofread this email?\n\nHi all, from now on always send the report by Friday. Thanks!",
    )
    write(session, 'Translate this: "Never leave the door open. I prefer tea."')
    write(session, "Why does this crash?\n```\n# always call init() first\nmy_name_is = None\n```")
    assert not Note.objects.exists()


def test_notes_reach_only_the_sessions_that_may_see_them(owner, other_user, write):
    alice = ChatSessionFactory(owner=owner, end_user="alice", memory_scope="shared")
    write(alice, "From now on, answer in Danish.")
    scoped = ChatSessionFactory(owner=owner, end_user="alice")
    write(scoped, "Always sign off with a haiku.")

    def notes_in(session) -> str:
        return build_context(session=session, question="Where is the station?").prompt.split("\n\n")[1]

    assert notes_in(ChatSessionFactory(owner=owner, end_user="alice", memory_scope="shared")).endswith(
        "- From now on, answer in Danish."
    )
    assert "Danish" not in notes_in(ChatSessionFactory(owner=owner, end_user="bob", memory_scope="shared"))
    assert "Danish" not in notes_in(
        ChatSessionFactory(owner=owner, memory_scope="shared")
    )  # the owner in person
    assert "Danish" not in notes_in(
        ChatSessionFactory(owner=other_user, end_user="alice", memory_scope="shared")
    )
    assert "Danish" not in notes_in(ChatSessionFactory(owner=owner, end_user="alice"))  # session-scoped
    assert "haiku" not in notes_in(alice)  # a session-scoped session lends nothing
    assert notes_in(scoped).endswith("- Always sign off with a haiku.")
    # Switched to shared, a session keeps its own notes and reads the person's too.
    scoped.memory_scope = "shared"
    scoped.save()
    section = notes_in(scoped)
    assert "haiku" in section and "Danish" in section
