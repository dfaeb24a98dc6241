"""Clients that name no session: each conversation is one session, found by
the fingerprint of the history the client sends back, per end user; through
the real ``openai`` client, a live server and the fake model server."""

from __future__ import annotations

import threading

import openai
import pytest
from django.db import connection

from sessions_app.history_fingerprint import history_fingerprint
from sessions_app.models import ChatSession, Episode
from sessions_app.services import episodes_bulk_create, session_create
from summaries.openai_api.sessions import conversation_candidates
from tests.openai_api.conftest import chat_requests
from tests.process_support import require_or_skip

pytestmark = pytest.mark.django_db(transaction=True)


class Conversation:
    """A stateless client: every call sends the whole conversation so far."""

    def __init__(self, client: openai.OpenAI, **kwargs) -> None:
        self.client, self.kwargs = client, kwargs
        self.messages: list[dict] = []
        self.sessions: list[str] = []

    def say(self, text: str, **extra) -> str:
        self.messages.append({"role": "user", "content": text})
        raw = self.client.chat.completions.with_raw_response.create(
            model="fake-chat", messages=self.messages, **self.kwargs, **extra
        )
        reply = raw.parse().choices[0].message.content
        self.messages.append({"role": "assistant", "content": reply})
        self.sessions.append(raw.headers["X-Nexus-Session"])
        return reply


def memory_sent(model, question: str) -> str:
    """The memory system message the fake model received for ``question``."""
    messages = chat_requests(model, question)[-1]["messages"]
    assert messages[-1] == {"role": "user", "content": question}
    return "\n".join(m["content"] for m in messages[:-1] if m["role"] == "system")


def test_a_stateless_clients_ten_calls_leave_one_session_of_ten(client, model, owner):
    talk = Conversation(client)
    talk.say("My cat is called Zorblax.")
    for n in range(8):
        talk.say(f"Unrelated question number {n} about the weather")
    talk.say("What is my cat called?")
    assert len(set(talk.sessions)) == 1
    session = ChatSession.objects.get(uuid=talk.sessions[0])
    assert (session.end_user, session.memory_scope) == ("", "session")
    assert ChatSession.objects.filter(owner=owner).count() == 1
    stored = list(Episode.objects.filter(session=session).order_by("position"))
    assert len(stored) == 10 == Episode.objects.count()
    assert (
        stored[0].user_input == "My cat is called Zorblax."
        and stored[-1].response == talk.messages[-1]["content"]
    )
    # The model gets the memory, not the history again: one user message, the fact from Nexus.
    sent = chat_requests(model, "What is my cat called?")[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user"]
    assert "Zorblax" in memory_sent(model, "What is my cat called?")


def test_streamed_calls_and_a_trimmed_reply_continue_the_same_session(client, model):
    talk = Conversation(client, user="ann")
    talk.say("Hello there")
    stream = client.chat.completions.create(
        model="fake-chat",
        messages=[*talk.messages, {"role": "user", "content": "Go on"}],
        user="ann",
        stream=True,
    )
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    talk.messages += [{"role": "user", "content": "Go on"}, {"role": "assistant", "content": f"  {text}\n"}]
    talk.say("And then?")
    assert len(set(talk.sessions)) == 1
    assert Episode.objects.filter(session__uuid=talk.sessions[0]).count() == 3


def test_two_end_users_of_one_account_keep_separate_sessions(client, model, owner):
    ann, bob = Conversation(client, user="ann"), Conversation(client, safety_identifier="bob")
    # The same words, so the same history: only the end user tells the sessions apart.
    for talk in (ann, bob):
        talk.say("Hello there")
    ann.say("My locker code is 4417.")
    bob.say("What is my locker code?")
    assert ann.sessions[0] == ann.sessions[1] != bob.sessions[0] == bob.sessions[1]
    sessions = {s.uuid.hex: s for s in ChatSession.objects.filter(owner=owner)}
    assert len(sessions) == 2
    people = {(s.end_user, s.memory_scope, s.cached_episode_count) for s in sessions.values()}
    assert people == {("ann", "shared", 2), ("bob", "shared", 2)}
    assert "4417" not in memory_sent(model, "What is my locker code?")
    # ``user`` names the end user when both are given.
    both = Conversation(client, user="bob", safety_identifier="ann")
    both.messages = list(bob.messages)
    both.say("Thanks")
    assert both.sessions == [bob.sessions[0]]


def test_a_request_without_earlier_messages_always_starts_a_new_session(client, model, owner):
    first, second = Conversation(client, user="ann"), Conversation(client, user="ann")
    first.say("Hello")
    second.say("Hello")
    assert first.sessions != second.sessions
    assert ChatSession.objects.filter(owner=owner, end_user="ann").count() == 2


def test_parallel_first_calls_lose_nothing(client, model, owner):
    if connection.vendor != "postgresql":
        require_or_skip(
            "concurrent writers need PostgreSQL (SQLite's test database is one shared-cache file)"
        )
    talks = [Conversation(client, user="carol") for _ in range(6)]
    failures: list[BaseException] = []

    def run(n: int) -> None:
        try:
            talks[n].say(f"Fact number {n}: my favourite number is {n * 111}.")
            talks[n].say(f"Follow-up number {n}")
        except BaseException as err:  # noqa: BLE001 - reported below
            failures.append(err)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(len(talks))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not failures
    for n, talk in enumerate(talks):
        assert len(set(talk.sessions)) == 1
        stored = Episode.objects.filter(session__uuid=talk.sessions[0]).order_by("position")
        assert [e.user_input for e in stored] == [f"Fact number {n}: my favourite number is {n * 111}.",
                                                  f"Follow-up number {n}"]  # fmt: skip
    assert ChatSession.objects.filter(owner=owner, end_user="carol", memory_scope="shared").count() == 6
    assert Episode.objects.count() == 12


def test_history_of_no_session_is_imported_once_and_a_retry_finds_it(client, model, owner):
    messages = [
        {"role": "user", "content": "My dog is Rex."},
        {"role": "assistant", "content": "Nice dog."},
        {"role": "user", "content": "How old is he?"},
    ]
    model.set_mode("http_500")
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model="fake-chat", messages=messages, user="dan")
    model.set_mode("ok")
    raw = client.chat.completions.with_raw_response.create(model="fake-chat", messages=messages, user="dan")
    session = ChatSession.objects.get(owner=owner)
    assert raw.headers["X-Nexus-Session"] == str(session.uuid)
    assert [e.user_input for e in session.episodes.order_by("position")] == [
        "My dog is Rex.",
        "How old is he?",
    ]
    assert session.title == "My dog is Rex."
    assert "Rex" in memory_sent(model, "How old is he?")


def test_a_history_several_sessions_hold_and_other_owners_sessions_are_not_taken(
    client, model, owner, other_user
):
    pairs = [{"user_input": "My dog is Rex.", "response": "Nice dog."}]
    twins = [session_create(owner=owner, end_user="eve", keeps_fingerprint=True) for _ in range(2)]
    theirs = session_create(owner=other_user, end_user="fay", keeps_fingerprint=True)
    for session in (*twins, theirs):
        episodes_bulk_create(session=session, items=pairs)
    history = [{"role": "user", "content": "My dog is Rex."}, {"role": "assistant", "content": "Nice dog."}]
    for user in ("eve", "fay"):
        raw = client.chat.completions.with_raw_response.create(
            model="fake-chat", messages=[*history, {"role": "user", "content": "Name?"}], user=user
        )
        made = ChatSession.objects.get(uuid=raw.headers["X-Nexus-Session"])
        assert made.pk not in {s.pk for s in (*twins, theirs)}
        assert (made.owner, made.end_user, made.cached_episode_count) == (owner, user, 2)
    # A session not made by the endpoint keeps no fingerprint, so is never taken either.
    assert session_create(owner=owner).history_fingerprint is None


@pytest.mark.parametrize(("name", "value"), [("user", "u" * 201), ("safety_identifier", "s" * 201)])
def test_an_end_user_longer_than_a_session_takes_is_a_400(client, model, name, value):
    with pytest.raises(openai.BadRequestError) as caught:
        Conversation(client, **{name: value}).say("Hi")
    assert caught.value.body["param"] == name
    assert not ChatSession.objects.exists()


def test_the_conversation_is_found_through_the_index(owner):
    """Whatever the number of the caller's sessions, one index lookup (no scan)."""
    fingerprint = history_fingerprint([("My dog is Rex.", "Nice dog.")])
    query = conversation_candidates(caller=owner, end_user="ann", fingerprint=fingerprint)
    sql, params = query.query.sql_with_params()
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET enable_seqscan = off")  # a tiny table is otherwise read whole
            cursor.execute(f"EXPLAIN {sql}", params)
        else:
            cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
        plan = " ".join(str(row) for row in cursor.fetchall())
        if connection.vendor == "postgresql":
            cursor.execute("RESET enable_seqscan")
    assert "session_history_fp_idx" in plan, plan


def test_a_new_conversation_of_the_same_user_recalls_a_fact_from_an_earlier_one(client, model, settings):
    settings.CONTEXT_SEMANTIC_CANDIDATES = 5000  # retrieval by meaning, as in production
    earlier = Conversation(client, user="gus")
    earlier.say("Hi, can you help me plan a weekend?")
    earlier.say("My sister Odalys moved to Tromsø last spring, so I fly north in March.")
    earlier.say("Any tips for packing light?")
    question = "Which town does my sibling live in now?"
    later = Conversation(client, user="gus")
    later.say(question)
    assert later.sessions[0] != earlier.sessions[0]
    assert "Tromsø" in memory_sent(model, question)
    # Another end user of the same account asking the same gets nothing of it.
    Conversation(client, user="hal").say(question)
    assert "Tromsø" not in memory_sent(model, question)
