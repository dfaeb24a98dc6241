"""What chat-history interfaces need of the REST API: one exchange read and
deleted, the history cleared, the newest N, a reply filled in once, and
writes in OpenAI's message format paired into exchanges."""

from __future__ import annotations

import pytest

from sessions_app.models import ChatSession, Episode
from summaries.models import Summary
from tests.factories import EpisodeFactory, SummaryFactory

pytestmark = pytest.mark.django_db


def url(session, suffix: str = "") -> str:
    return f"/api/sessions/{session.uuid}/episodes/{suffix}"


def test_one_exchange_is_read(api_client, session, episodes):
    answer = api_client.get(url(session, f"{episodes[1].pk}/"))
    assert answer.status_code == 200
    assert answer.json()["user_input"] == episodes[1].user_input
    assert answer.json()["position"] == 2


def test_exchanges_of_others_or_of_another_session_are_not_found(
    api_client, other_client, session, episodes, other_session
):
    theirs = EpisodeFactory(session=other_session)
    assert other_client.get(url(session, f"{episodes[0].pk}/")).status_code == 404
    assert other_client.delete(url(session, f"{episodes[0].pk}/")).status_code == 404
    assert api_client.get(url(session, f"{theirs.pk}/")).status_code == 404
    assert api_client.delete(url(session, f"{theirs.pk}/")).status_code == 404
    assert api_client.get(url(session, "nope/")).status_code == 404
    assert api_client.delete(url(session)).status_code == 200  # its own history only
    assert Episode.objects.filter(pk=theirs.pk).exists()


def test_deleting_one_moves_the_counters_and_never_reuses_its_position(api_client, session, episodes):
    assert api_client.delete(url(session, f"{episodes[2].pk}/")).status_code == 204
    assert api_client.get(url(session, f"{episodes[2].pk}/")).status_code == 404
    stats = api_client.get(f"/api/sessions/{session.uuid}/episode-stats/").json()
    assert stats["episode_count"] == 2
    assert stats["last_episode_id"] == episodes[1].pk
    truth = ChatSession.objects.with_aggregate_stats().get(pk=session.pk)
    assert stats["total_tokens"] == truth.total_tokens
    written = api_client.post(url(session), {"user_input": "again", "response": "yes"}, format="json")
    assert written.json()["position"] == 4
    assert api_client.delete(url(session, f"{episodes[2].pk}/")).status_code == 404


def test_clear_keeps_the_session_and_drops_history_and_summaries(api_client, session, episodes):
    SummaryFactory(session=session, first_episode_id=episodes[0].pk, last_episode_id=episodes[1].pk, curated=True)
    answer = api_client.delete(url(session))
    assert answer.status_code == 200 and answer.json() == {"deleted": 3}
    detail = api_client.get(f"/api/sessions/{session.uuid}/").json()
    assert detail["episode_count"] == 0 and detail["total_tokens"] == 0 and detail["last_episode_id"] is None
    assert not Summary.objects.filter(session=session).exists()
    assert api_client.get(url(session)).json()["results"] == []
    written = api_client.post(url(session), {"user_input": "after", "response": "clear"}, format="json")
    assert written.json()["position"] == 4


def test_newest_n_oldest_first(api_client, session, episodes):
    answer = api_client.get(url(session), {"newest": 2})
    assert answer.status_code == 200
    assert [e["id"] for e in answer.json()["results"]] == [episodes[1].pk, episodes[2].pk]
    assert len(api_client.get(url(session), {"newest": 50}).json()["results"]) == 3
    for bad in ("0", "x", "100000"):
        refused = api_client.get(url(session), {"newest": bad})
        assert refused.status_code == 400 and "newest" in refused.json()


def test_newest_reads_a_fixed_number_of_rows(api_client, session, django_assert_max_num_queries):
    EpisodeFactory.create_batch(30, session=session)
    with django_assert_max_num_queries(4):
        assert len(api_client.get(url(session), {"newest": 5}).json()["results"]) == 5


def test_a_user_message_is_stored_before_its_reply_and_filled_once(api_client, session):
    stored = api_client.post(url(session), {"user_input": "What is 2+2?", "response": ""}, format="json")
    assert stored.status_code == 201 and stored.json()["response"] == ""
    pk = stored.json()["id"]
    filled = api_client.patch(url(session, f"{pk}/"), {"response": "Four."}, format="json")
    assert filled.status_code == 200 and filled.json()["response"] == "Four."
    assert filled.json()["token_count"] > stored.json()["token_count"]
    assert ChatSession.objects.get(pk=session.pk).cached_total_tokens == filled.json()["token_count"]
    again = api_client.patch(url(session, f"{pk}/"), {"response": "Five."}, format="json")
    assert again.status_code == 409 and again.json()["field"] == "response"
    assert Episode.objects.get(pk=pk).response == "Four."


@pytest.mark.parametrize(
    "body, field",
    [({"response": ""}, "response"), ({"response": "x", "user_input": "y"}, "user_input"), ({}, "response")],
)
def test_a_bad_fill_names_the_field(api_client, session, body, field):
    pk = api_client.post(url(session), {"user_input": "q", "response": ""}, format="json").json()["id"]
    answer = api_client.patch(url(session, f"{pk}/"), body, format="json")
    assert answer.status_code == 400 and field in answer.json()


def test_messages_are_paired_into_exchanges(api_client, session):
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": [{"type": "output_text", "text": "Hello!"}]},
        {"role": "user", "content": [{"type": "input_text", "text": "Weather?"}]},
        {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
        {"role": "assistant", "content": "Sunny."},
        {"role": "user", "content": "Thanks"},
    ]
    answer = api_client.post(url(session), {"messages": messages}, format="json")
    assert answer.status_code == 201, answer.json()
    written = answer.json()
    assert [(e["user_input"], e["response"]) for e in written] == [
        ("Hi", "Hello!"), ("Weather?", "Sunny."), ("Thanks", "")
    ]  # fmt: skip
    # The system message came before the first user message: it continues
    # nothing here, so it is kept with the first exchange.
    assert written[0]["metadata"]["items"][0] == {"role": "system", "content": "Be brief."}
    assert [i.get("type") for i in written[1]["metadata"]["items"]] == [
        "nexus_text", "function_call", "function_call_output", "nexus_text"
    ]  # fmt: skip
    assert written[2]["metadata"] == {}


def test_messages_without_a_user_message_continue_the_newest_exchange(api_client, session):
    first = api_client.post(url(session), {"messages": [{"role": "user", "content": "Hi"}]}, format="json")
    assert first.json()[0]["response"] == ""
    reply = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hello"}]}
    answer = api_client.post(url(session), {"messages": [reply]}, format="json")
    assert answer.status_code == 201
    assert answer.json()[0]["id"] == first.json()[0]["id"]
    assert answer.json()[0]["response"] == "Hello"
    assert Episode.objects.count() == 1
    more = api_client.post(url(session), {"messages": [{"role": "assistant", "content": "Anything else?"}]}, format="json")
    items = more.json()[0]["metadata"]["items"]
    assert items[-1] == {"role": "assistant", "content": "Anything else?"}
    assert more.json()[0]["response"] == "Hello"


@pytest.mark.parametrize(
    "messages, field",
    [
        ([], "messages"),
        ("hello", "messages"),
        ([{"role": "assistant", "content": "orphan"}], "messages[0]"),
        ([{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}], "messages[0].content"),
        ([{"role": "user", "content": ""}], "messages[0].content"),
        ([{"role": "user", "content": "a\x00b"}], "messages[0].content"),
        ([{"role": "user", "content": "q"}, {"type": "reasoning", "summary": ["x" * 20000]}], "messages[0]"),
    ],
)
def test_bad_messages_name_the_message(api_client, session, messages, field):
    answer = api_client.post(url(session), {"messages": messages}, format="json")
    assert answer.status_code == 400, answer.json()
    assert field in answer.json()
    assert not Episode.objects.filter(session=session).exists()


def pop(client, session):
    return client.delete(f"/api/sessions/{session.uuid}/items/newest/")


def test_the_newest_item_is_taken_off_one_at_a_time(api_client, session):
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "Weather?"},
        {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{}"},
        {"role": "assistant", "content": "Sunny."},
    ]
    assert api_client.post(url(session), {"messages": messages}, format="json").status_code == 201
    popped = []
    for _ in range(4):
        answer = pop(api_client, session)
        assert answer.status_code == 200, answer.json()
        popped.append(answer.json()["item"])
    assert popped == messages[:1:-1]
    # What is left is the first exchange's items, as they were sent.
    (left,) = api_client.get(url(session)).json()["results"]
    assert (left["user_input"], left["response"]) == ("Hi", "")
    assert left["metadata"]["items"] == [messages[0], {"type": "nexus_text", "field": "user_input"}]
    # The system message cannot stand without its user message: nothing changes.
    answer = pop(api_client, session)
    assert answer.status_code == 400 and "items" in answer.json()
    assert [e["id"] for e in api_client.get(url(session)).json()["results"]] == [left["id"]]
    api_client.delete(url(session))
    assert pop(api_client, session).json() == {"item": None}


def test_popping_keeps_the_rest_of_the_exchange_and_the_older_ones(api_client, session):
    first = {"user_input": "Older", "response": "Kept."}
    assert api_client.post(url(session), first, format="json").status_code == 201
    messages = [
        {"role": "user", "content": "Weather?"},
        {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
        {"role": "assistant", "content": "Sunny."},
    ]
    api_client.post(url(session), {"messages": messages}, format="json")
    assert pop(api_client, session).json() == {"item": {"role": "assistant", "content": "Sunny."}}
    older, rest = api_client.get(url(session)).json()["results"]
    assert (older["user_input"], older["response"]) == ("Older", "Kept.")
    assert (rest["user_input"], rest["response"]) == ("Weather?", "")
    assert [i.get("type") for i in rest["metadata"]["items"]] == [
        "nexus_text", "function_call", "function_call_output"
    ]  # fmt: skip


def test_the_newest_item_of_others_is_not_found(api_client, other_client, session, episodes):
    assert pop(other_client, session).status_code == 404
    assert Episode.objects.filter(session=session).count() == len(episodes)
    assert pop(api_client, session).json()["item"] == {"role": "assistant", "content": episodes[-1].response}
