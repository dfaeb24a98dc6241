"""Episodes may carry their original ``created_at`` (imported history): ISO
8601 with an offset, from 1970, not in the future, not earlier than the
session's newest episode, non-decreasing along a list; else 400 naming the field."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from sessions_app.models import ChatSession, Episode
from sessions_app.transcripts import parse_transcript, transcript_import
from summaries.context import build_context

pytestmark = pytest.mark.django_db


def url(session) -> str:
    return f"/api/sessions/{session.uuid}/episodes/"


def exchange(n: int, when: str | None = None) -> dict:
    item = {"user_input": f"Question {n}?", "response": f"Answer {n}."}
    if when is not None:
        item["created_at"] = when
    return item


def test_a_single_episode_keeps_its_date(api_client, session):
    response = api_client.post(url(session), exchange(1, "2023-05-08T14:30:00+02:00"), format="json")
    assert response.status_code == 201
    stored = Episode.objects.get(pk=response.json()["id"])
    assert stored.created_at == datetime(2023, 5, 8, 12, 30, tzinfo=UTC)
    assert response.json()["created_at"].startswith("2023-05-08T12:30:00")
    session.refresh_from_db()
    assert session.cached_last_episode_at == stored.created_at


def test_without_a_date_an_episode_gets_now(api_client, session):
    before = timezone.now()
    body = api_client.post(url(session), exchange(1), format="json").json()
    assert Episode.objects.get(pk=body["id"]).created_at >= before


@pytest.mark.parametrize(
    "when",
    ["2023-05-08T14:30:00", "yesterday", "2023-13-01T00:00:00Z", 12345],
)
def test_a_date_without_an_offset_or_not_a_date_is_refused(api_client, session, when):
    response = api_client.post(url(session), exchange(1, when), format="json")
    assert response.status_code == 400
    assert list(response.json()) == ["created_at"]
    assert not Episode.objects.filter(session=session).exists()


def test_a_date_in_the_future_is_refused(api_client, session):
    later = (timezone.now() + timedelta(hours=2)).isoformat()
    response = api_client.post(url(session), exchange(1, later), format="json")
    assert response.status_code == 400 and list(response.json()) == ["created_at"]


def test_a_date_before_the_sessions_newest_episode_is_refused(api_client, session):
    api_client.post(url(session), exchange(1, "2023-06-01T10:00:00Z"), format="json")
    response = api_client.post(url(session), exchange(2, "2023-05-01T10:00:00Z"), format="json")
    assert response.status_code == 400
    assert list(response.json()) == ["created_at"]
    assert Episode.objects.filter(session=session).count() == 1
    # The same moment is fine: dates do not decrease.
    assert (
        api_client.post(url(session), exchange(3, "2023-06-01T10:00:00Z"), format="json").status_code == 201
    )


def test_a_list_must_not_go_back_in_time(api_client, session):
    batch = [
        exchange(0, "2023-05-01T10:00:00Z"),
        exchange(1, "2023-05-02T10:00:00Z"),
        exchange(2, "2023-05-01T09:00:00Z"),
    ]
    response = api_client.post(url(session), batch, format="json")
    assert response.status_code == 400
    assert set(response.json()) == {"2"} and "created_at" in response.json()["2"]
    assert not Episode.objects.filter(session=session).exists()


def test_a_list_dated_before_the_sessions_newest_episode_is_refused_at_its_first_item(api_client, session):
    api_client.post(url(session), exchange(0, "2023-06-01T10:00:00Z"), format="json")
    batch = [exchange(1, "2023-05-01T10:00:00Z"), exchange(2, "2023-05-02T10:00:00Z")]
    response = api_client.post(url(session), batch, format="json")
    assert response.status_code == 400
    assert set(response.json()) == {"0"} and "created_at" in response.json()["0"]
    assert Episode.objects.filter(session=session).count() == 1


def test_a_dated_list_keeps_its_dates_and_the_newest_on_the_session(api_client, session):
    batch = [exchange(n, f"2023-05-0{n + 1}T10:00:00Z") for n in range(3)]
    body = api_client.post(url(session), batch, format="json").json()
    assert [row["created_at"][:10] for row in body] == ["2023-05-01", "2023-05-02", "2023-05-03"]
    session.refresh_from_db()
    assert session.cached_last_episode_at == datetime(2023, 5, 3, 10, tzinfo=UTC)
    assert session.cached_last_episode_id == body[-1]["id"]


def test_the_importer_reads_naive_times_as_utc_and_refuses_going_back(owner):
    lines = [
        b'{"user_input": "first", "response": "a", "created_at": "2023-05-08T09:00:00"}',
        b'{"user_input": "second", "response": "b", "created_at": "2023-05-09T09:00:00+00:00"}',
    ]
    session = transcript_import(owner=owner, transcript=parse_transcript(lines))
    dates = list(Episode.objects.for_session(session.pk).values_list("created_at", flat=True))
    assert dates == [datetime(2023, 5, 8, 9, tzinfo=UTC), datetime(2023, 5, 9, 9, tzinfo=UTC)]

    backwards = parse_transcript(list(reversed(lines)))
    # Refused as it is read, by its line, before anything is stored.
    assert backwards.errors == [(2, '"created_at": Must not be earlier than the episode before it.')]
    with pytest.raises(ValueError, match="bad lines"):
        transcript_import(owner=owner, transcript=backwards)
    assert ChatSession.objects.filter(owner=owner).count() == 1


def test_the_context_quotes_retrieved_history_with_its_real_date(api_client, session):
    batch = [exchange(n, f"2023-05-{n + 1:02d}T10:00:00Z") for n in range(20)]
    batch[2] = {
        "user_input": "I adopted a greyhound called Biscuit.",
        "response": "Biscuit sounds lovely.",
        "created_at": "2023-05-03T10:00:00Z",
    }
    api_client.post(url(session), batch, format="json")
    session.refresh_from_db()
    prompt = build_context(session=session, question="What is my greyhound called?", budget=2000).prompt
    assert "[3 May 2023 · #3] Q: I adopted a greyhound called Biscuit." in prompt


# --- dates PostgreSQL stores but no read can return ------------------------------
# 0001-01-01T00:00:00+14:00 is 31 December of 1 BC in UTC: PostgreSQL keeps it,
# and every later read of the row (session list, search, export) failed.


OUT_OF_RANGE = [
    "0001-01-01T00:00:00+14:00",
    "0001-01-01T00:00:00Z",
    "1969-12-31T23:59:59Z",
    "9999-12-31T23:59:59-14:00",
]


@pytest.mark.parametrize("when", OUT_OF_RANGE)
def test_a_date_outside_what_can_be_stored_and_read_is_refused_naming_the_field(api_client, session, when):
    single = api_client.post(url(session), exchange(1, when), format="json")
    assert single.status_code == 400 and list(single.json()) == ["created_at"]
    batch = [exchange(0, "2023-05-01T10:00:00Z"), exchange(1, when)]
    bulk = api_client.post(url(session), batch, format="json")
    assert bulk.status_code == 400
    assert set(bulk.json()) == {"1"} and list(bulk.json()["1"]) == ["created_at"]
    assert not Episode.objects.filter(session=session).exists()
    assert api_client.get("/api/sessions/").status_code == 200


def test_the_first_moment_of_1970_is_the_earliest_date_taken(api_client, session):
    refused = api_client.post(url(session), exchange(0, "1969-12-31T23:59:59Z"), format="json")
    assert refused.json() == {"created_at": ["Must not be before 1970-01-01T00:00:00Z."]}
    taken = api_client.post(url(session), exchange(1, "1970-01-01T01:00:00+01:00"), format="json")
    assert taken.status_code == 201
    assert Episode.objects.get().created_at == datetime(1970, 1, 1, tzinfo=UTC)
