"""Through the real ``openai`` client: a request's ``user`` reads that end
user's shared memory, and only that: two end users of one account, and two
accounts with the same ``user``, keep separate memories."""

from __future__ import annotations

import json

import pytest

from sessions_app.services import episodes_bulk_create
from tests.factories import ChatSessionFactory
from tests.openai_api.conftest import chat_requests

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "When does the zanzibar ferry leave?"


def remembered(owner, end_user: str, marker: str) -> None:
    """A shared chat of ``end_user`` holding the fact with its own marker, among filler."""
    session = ChatSessionFactory(owner=owner, title="Trip", end_user=end_user, memory_scope="shared")
    items = [{"user_input": f"Garden note {n}.", "response": "Noted."} for n in range(30)]
    items.append({"user_input": f"The zanzibar ferry leaves at {marker}.", "response": "Saved."})
    episodes_bulk_create(session=session, items=items)


def sent_to_model(model) -> str:
    (body,) = chat_requests(model, QUESTION)
    return json.dumps(body["messages"])


def test_each_end_user_reads_only_their_own_memory(client, model, owner, other_user):
    remembered(owner, "alice", "alice-nine")
    remembered(owner, "bob", "bob-ten")
    remembered(other_user, "alice", "stranger-eleven")
    remembered(owner, "", "owner-twelve")
    messages = [{"role": "user", "content": QUESTION}]
    client.chat.completions.create(model="fake-chat", messages=messages, user="alice")
    seen = sent_to_model(model)
    assert "alice-nine" in seen
    for marker in ("bob-ten", "stranger-eleven", "owner-twelve"):
        assert marker not in seen


def test_without_a_user_the_call_reads_no_shared_memory(client, model, owner):
    remembered(owner, "", "owner-twelve")
    client.chat.completions.create(model="fake-chat", messages=[{"role": "user", "content": QUESTION}])
    assert "owner-twelve" not in sent_to_model(model)
