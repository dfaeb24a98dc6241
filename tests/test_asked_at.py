"""``asked_at``: when a question is asked, on the context and chat endpoints
and ``metadata.nexus_asked_at`` on ``/v1/``; the dates a question names,
resolved against it."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from sessions_app.question_dates import parse_asked_at, spans_in
from tests.factories import EpisodeFactory

ASKED = datetime(2024, 3, 13, 10, 0, tzinfo=timezone(timedelta(hours=1)))  # a Wednesday
BAD = ["2024-03-13", "2024-03-13T10:00:00", "yesterday", "2024-13-01T10:00:00+00:00", " "]


def days(question: str) -> list[tuple[str, str]]:
    """The first and last day of each span ``question`` names, asked at ``ASKED``."""
    return [
        (span.start.date().isoformat(), (span.end - timedelta(days=1)).date().isoformat())
        for span in spans_in(question, ASKED)
    ]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What did I say yesterday?", [("2024-03-12", "2024-03-12")]),
        ("What did we plan last week?", [("2024-03-04", "2024-03-10")]),
        ("What did I tell you in May?", [("2023-05-01", "2023-05-31")]),  # the last May that has begun
        ("What happened on 8 May 2023?", [("2023-05-08", "2023-05-08")]),
        ("What did I buy two years ago?", [("2022-01-01", "2022-12-31")]),
        ("Where was I three days ago?", [("2024-03-10", "2024-03-10")]),
        ("What did I do last weekend?", [("2024-03-09", "2024-03-10")]),
        ("Who called last Friday?", [("2024-03-08", "2024-03-08")]),
        ("What was decided on May 8th?", [("2023-05-08", "2023-05-08")]),
        ("What changed a month ago?", [("2024-02-01", "2024-02-29")]),
    ],
)
def test_dates_in_a_question_are_resolved_against_when_it_is_asked(question, expected):
    assert days(question) == expected


@pytest.mark.parametrize(
    "question",
    ["How far do I aim to jog every week?", "How much do I spend every month these days?", "I may come", ""],
)
def test_what_is_no_date_names_none(question):
    assert spans_in(question, ASKED) == []


def test_yesterday_is_the_askers_yesterday():
    # 00:30 on the 13th at +02:00 is still the 12th in UTC: yesterday is the 12th where the asker is.
    asked = parse_asked_at("2024-03-13T00:30:00+02:00")
    (span,) = spans_in("yesterday", asked)
    assert span.start == datetime(2024, 3, 12, tzinfo=timezone(timedelta(hours=2)))
    assert span.holds(datetime(2024, 3, 12, 21, 0, tzinfo=timezone.utc))  # 23:00 there
    assert not span.holds(datetime(2024, 3, 12, 22, 30, tzinfo=timezone.utc))  # 00:30 the 13th there


def test_asked_at_takes_an_offset_or_z():
    assert parse_asked_at("2024-03-13T10:00:00Z") == datetime(2024, 3, 13, 10, tzinfo=timezone.utc)
    assert parse_asked_at("2024-03-13T10:00:00+01:00") == ASKED
    for value in BAD:
        with pytest.raises(ValueError):
            parse_asked_at(value)


# --- the endpoints --------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("value", BAD)
def test_a_bad_asked_at_on_the_context_endpoint_is_400_naming_it(api_client, session, value):
    answer = api_client.get(f"/api/sessions/{session.uuid}/context/", {"question": "Hi", "asked_at": value})
    assert answer.status_code == 400
    assert list(answer.json()) == ["asked_at"]


@pytest.mark.django_db
def test_a_good_asked_at_on_the_context_endpoint_is_taken(api_client, session):
    EpisodeFactory(session=session)
    answer = api_client.get(
        f"/api/sessions/{session.uuid}/context/", {"question": "Hi", "asked_at": "2024-03-13T10:00:00+01:00"}
    )
    assert answer.status_code == 200, answer.content


@pytest.mark.django_db
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("value", ["2024-03-13", "soon", 7])
def test_a_bad_asked_at_on_the_chat_endpoint_is_400_naming_it(api_client, session, model, stream, value):
    accept = {"HTTP_ACCEPT": "text/event-stream"} if stream else {}
    body = {"message": "Hello", "asked_at": value}
    answer = api_client.post(f"/api/sessions/{session.uuid}/chat/", body, format="json", **accept)
    assert answer.status_code == 400
    if stream:
        assert b'"errors":{"asked_at"' in answer.content
    else:
        assert list(answer.json()) == ["asked_at"]
    assert not session.episodes.exists()
    assert model.requests == []


@pytest.mark.django_db
def test_a_good_asked_at_on_the_chat_endpoint_is_taken(api_client, session, model):
    answer = api_client.post(
        f"/api/sessions/{session.uuid}/chat/",
        {"message": "Hello", "asked_at": "2024-03-13T10:00:00Z"},
        format="json",
    )
    assert answer.status_code == 201, answer.content


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["2024-03-13", "later", 1710324000])
def test_a_bad_nexus_asked_at_on_v1_is_400_naming_it(api_client, session, model, value):
    body = {
        "model": "fake-chat",
        "messages": [{"role": "user", "content": "Hello"}],
        "metadata": {"nexus_asked_at": value},
    }
    header = {"HTTP_X_NEXUS_SESSION": str(session.uuid)}
    answer = api_client.post("/v1/chat/completions", body, format="json", **header)
    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == "metadata.nexus_asked_at"
    assert model.requests == []


@pytest.mark.django_db
def test_a_good_nexus_asked_at_on_v1_is_taken(api_client, session, model):
    body = {
        "model": "fake-chat",
        "messages": [{"role": "user", "content": "Hello"}],
        "metadata": {"nexus_asked_at": "2024-03-13T10:00:00+01:00"},
    }
    header = {"HTTP_X_NEXUS_SESSION": str(session.uuid)}
    answer = api_client.post("/v1/chat/completions", body, format="json", **header)
    assert answer.status_code == 200, answer.content
