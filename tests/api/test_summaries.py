"""Summaries: the chain, manual rows, curation by PATCH, regenerate and
summarize (202 with the state), the summarization status; who sees what."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from sessions_app.tokens import count_tokens
from summaries.models import SummarizationState, Summary, SummaryRevision
from tests.factories import ChatSessionFactory, EpisodeFactory, SummaryFactory

pytestmark = pytest.mark.django_db

SUMMARY_FIELDS = {
    "id", "session", "content", "token_count", "episode_range", "first_episode_id", "last_episode_id",
    "first_position", "last_position", "curated", "curated_by_you", "curated_by_staff", "model",
    "prompt_tokens", "completion_tokens", "duration_ms", "created_at", "updated_at", "replaced_curation",
    "needs_review", "review_note",
}  # fmt: skip
STATUS_FIELDS = {"state", "last_error", "updated_at", "pending_episodes"}


@pytest.fixture
def made(session):
    return EpisodeFactory.create_batch(8, session=session)


@pytest.fixture
def summary(session, made):
    return SummaryFactory(session=session, first_episode_id=made[0].pk, last_episode_id=made[2].pk)


def add_chain(session, made, rows: int) -> list[Summary]:
    return [
        SummaryFactory(session=session, first_episode_id=made[i].pk, last_episode_id=made[i].pk)
        for i in range(rows)
    ]


# --- the chain ----------------------------------------------------------------


def test_chain_oldest_first(api_client, session, made):
    later = SummaryFactory(session=session, first_episode_id=made[3].pk, last_episode_id=made[5].pk)
    earlier = SummaryFactory(session=session, first_episode_id=made[0].pk, last_episode_id=made[2].pk)
    body = api_client.get(f"/api/sessions/{session.uuid}/summaries/").json()
    assert [row["id"] for row in body["results"]] == [earlier.pk, later.pk]
    row = body["results"][0]
    assert set(row) == SUMMARY_FIELDS
    assert row["session"] == str(session.uuid)
    assert row["episode_range"] == f"{made[0].pk}-{made[2].pk}"
    assert [(r["first_position"], r["last_position"]) for r in body["results"]] == [(1, 3), (4, 6)]


def test_chain_query_count_does_not_grow(api_client, session, made):
    def count_queries() -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert api_client.get(f"/api/sessions/{session.uuid}/summaries/").status_code == 200
        return len(ctx.captured_queries)

    add_chain(session, made, 1)
    few = count_queries()
    Summary.objects.all().delete()
    add_chain(session, made, 8)
    assert few == count_queries() == 2


def test_chain_is_paginated(api_client, session, made, settings):
    settings.API_PAGE_SIZE = 3
    rows = add_chain(session, made, 7)
    seen, next_url = [], f"/api/sessions/{session.uuid}/summaries/"
    while next_url:
        body = api_client.get(next_url).json()
        seen += [row["id"] for row in body["results"]]
        next_url = body["next"]
    assert seen == [row.pk for row in rows]


# --- one row ------------------------------------------------------------------


def test_retrieve(api_client, summary):
    body = api_client.get(f"/api/summaries/{summary.pk}/").json()
    assert body["id"] == summary.pk and body["content"] == summary.content


def test_unknown_summary_is_404(api_client):
    assert api_client.get("/api/summaries/999999/").status_code == 404
    assert api_client.get(f"/api/summaries/{2**70}/").status_code == 404


@pytest.mark.parametrize("bad", ["abc", "-1", "1.5", "+3", "\u0663", "1e3"])
@pytest.mark.parametrize(("method", "tail"), [("get", ""), ("patch", ""), ("post", "regenerate/")])
def test_malformed_summary_id_is_a_json_404(api_client, summary, bad, method, tail):
    response = getattr(api_client, method)(f"/api/summaries/{bad}/{tail}", {"content": "x"}, format="json")
    assert response.status_code == 404
    assert response.json() == {"detail": "No such summary."}
    summary.refresh_from_db()
    assert not summary.curated


def test_patch_curates_and_keeps_a_revision(api_client, owner, summary):
    old = summary.content
    response = api_client.patch(f"/api/summaries/{summary.pk}/", {"content": "Edited by hand."}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["content"] == "Edited by hand." and body["curated"] is True
    assert body["token_count"] == count_tokens("Edited by hand.")
    summary.refresh_from_db()
    assert summary.curated and summary.curated_by == owner
    revision = SummaryRevision.objects.get(summary=summary)
    assert (revision.content, revision.source) == (old, SummaryRevision.Source.API_EDIT)


def test_patch_cannot_change_the_range(api_client, summary):
    first, last = summary.first_episode_id, summary.last_episode_id
    api_client.patch(
        f"/api/summaries/{summary.pk}/",
        {"content": "x", "first_episode_id": 1, "last_episode_id": 10**6},
        format="json",
    )
    summary.refresh_from_db()
    assert (summary.first_episode_id, summary.last_episode_id) == (first, last)


@pytest.mark.parametrize(
    ("payload", "field"), [({}, "content"), ({"content": ""}, "content"), ({"content": "a\x00b"}, "content")]
)
def test_patch_bad_content_is_400(api_client, summary, payload, field):
    response = api_client.patch(f"/api/summaries/{summary.pk}/", payload, format="json")
    assert response.status_code == 400 and field in response.json()


def test_patch_content_size_limit(api_client, summary, settings):
    settings.SUMMARY_CONTENT_MAX_CHARS = 20
    response = api_client.patch(f"/api/summaries/{summary.pk}/", {"content": "x" * 21}, format="json")
    assert response.status_code == 400 and "content" in response.json()


# --- manual rows --------------------------------------------------------------


def test_create_manual_row(api_client, owner, session, made):
    payload = {
        "session": str(session.uuid),
        "content": "They compared two approaches.",
        "first_episode_id": made[0].pk,
        "last_episode_id": made[3].pk,
        "token_count": 999,
        "curated": False,
    }
    response = api_client.post("/api/summaries/", payload, format="json")
    assert response.status_code == 201
    body = response.json()
    assert body["curated"] is True
    assert body["token_count"] == count_tokens(payload["content"])
    assert body["episode_range"] == f"{made[0].pk}-{made[3].pk}"
    assert (body["first_position"], body["last_position"]) == (1, 4)
    row = Summary.objects.get(pk=body["id"])
    assert (row.session_id, row.curated_by) == (session.pk, owner)


def test_create_rejects_an_overlapping_range(api_client, session, made, summary):
    payload = {
        "session": str(session.uuid),
        "content": "Overlaps.",
        "first_episode_id": made[2].pk,
        "last_episode_id": made[4].pk,
    }
    response = api_client.post("/api/summaries/", payload, format="json")
    assert response.status_code == 400
    assert "first_episode_id" in response.json()
    assert Summary.objects.count() == 1


def test_create_rejects_episodes_of_another_session(api_client, session, made, other_session):
    foreign = EpisodeFactory(session=other_session)
    payload = {
        "session": str(session.uuid),
        "content": "x",
        "first_episode_id": made[0].pk,
        "last_episode_id": foreign.pk,
    }
    response = api_client.post("/api/summaries/", payload, format="json")
    assert response.status_code == 400 and set(response.json()) == {"last_episode_id"}


def test_create_rejects_a_reversed_range(api_client, session, made):
    payload = {"session": str(session.uuid), "content": "x", "first_episode_id": made[3].pk, "last_episode_id": made[1].pk}
    response = api_client.post("/api/summaries/", payload, format="json")
    assert response.status_code == 400 and "last_episode_id" in response.json()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"session": "not-a-uuid"}, "session"),
        ({"content": ""}, "content"),
        ({"first_episode_id": "one"}, "first_episode_id"),
        ({"first_episode_id": 0}, "first_episode_id"),
        ({"last_episode_id": 2**64}, "last_episode_id"),
    ],
)
def test_create_bad_fields_are_400(api_client, session, made, change, field):
    payload = {"session": str(session.uuid), "content": "x", "first_episode_id": made[0].pk, "last_episode_id": made[0].pk}
    response = api_client.post("/api/summaries/", {**payload, **change}, format="json")
    assert response.status_code == 400 and field in response.json()


def test_create_content_size_limit(api_client, session, made, settings):
    settings.SUMMARY_CONTENT_MAX_CHARS = 5
    payload = {"session": str(session.uuid), "content": "x" * 6, "first_episode_id": made[0].pk, "last_episode_id": made[0].pk}
    response = api_client.post("/api/summaries/", payload, format="json")
    assert response.status_code == 400 and "content" in response.json()


def test_create_for_someone_elses_session_is_400(other_client, session, made):
    payload = {"session": str(session.uuid), "content": "x", "first_episode_id": made[0].pk, "last_episode_id": made[0].pk}
    response = other_client.post("/api/summaries/", payload, format="json")
    assert response.status_code == 400 and "session" in response.json()
    assert not Summary.objects.exists()


# --- queueing work and the state ---------------------------------------------------


def test_summarize_is_202_with_the_state(api_client, session, made, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        response = api_client.post(f"/api/sessions/{session.uuid}/summarize/")
    assert response.status_code == 202
    assert set(response.json()) == STATUS_FIELDS
    assert len(callbacks) == 1  # the forced request, run after commit


def test_regenerate_is_202_with_the_state(api_client, summary, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        response = api_client.post(f"/api/summaries/{summary.pk}/regenerate/")
    assert response.status_code == 202
    assert set(response.json()) == STATUS_FIELDS
    assert len(callbacks) == 1


RAW_ERROR = (
    "TransientInferenceError: ollama: cannot reach http://10.0.3.7:11434/api/chat "
    "(ConnectError: [Errno 111] Connection refused)"
)


def test_status(api_client, session, made, summary):
    SummarizationState.objects.filter(session=session).update(state="failed", last_error=RAW_ERROR)
    body = api_client.get(f"/api/sessions/{session.uuid}/summary-status/").json()
    assert set(body) == STATUS_FIELDS
    assert body["state"] == "failed"
    # The owner reads what went wrong in words, never the model server's address or its raw answer.
    assert body["last_error"] == "The summary model could not be reached or was busy; it is tried again later."
    assert body["pending_episodes"] == 5  # 8 episodes, the first 3 summarized


def test_staff_read_the_whole_error(staff_client, session, made, summary):
    SummarizationState.objects.filter(session=session).update(state="failed", last_error=RAW_ERROR)
    body = staff_client.get(f"/api/sessions/{session.uuid}/summary-status/").json()
    assert body["last_error"] == RAW_ERROR


@pytest.mark.parametrize(
    "stored",
    [RAW_ERROR, "PermanentInferenceError: openai: HTTP 400 from https://llm.internal/v1 {\"error\": \"bad\"}",
     "OperationalError: could not connect to server at db.internal:5432", "weird"],
)  # fmt: skip
def test_an_ordinary_user_never_reads_an_address_or_a_raw_answer(api_client, session, made, summary, stored):
    from django.test import Client

    SummarizationState.objects.filter(session=session).update(state="failed", last_error=stored)
    shown = api_client.get(f"/api/sessions/{session.uuid}/summary-status/").json()["last_error"]
    assert shown and shown != stored
    for secret in ("10.0.3.7", "llm.internal", "db.internal", "http", "Error"):
        assert secret not in shown
    browser = Client()
    browser.force_login(session.owner)
    page = browser.get(f"/sessions/{session.uuid}/").content.decode()
    for secret in ("10.0.3.7", "llm.internal", "db.internal"):
        assert secret not in page
    assert shown in page


def test_status_of_a_session_never_summarized(api_client, session):
    body = api_client.get(f"/api/sessions/{session.uuid}/summary-status/").json()
    assert (body["state"], body["pending_episodes"]) == ("idle", 0)


# --- who sees what ------------------------------------------------------------------


def _endpoints(session, summary):
    return [
        ("get", f"/api/sessions/{session.uuid}/summaries/", None, 200),
        ("get", f"/api/summaries/{summary.pk}/", None, 200),
        ("patch", f"/api/summaries/{summary.pk}/", {"content": "Curated."}, 200),
        ("post", f"/api/summaries/{summary.pk}/regenerate/", None, 202),
        ("post", f"/api/sessions/{session.uuid}/summarize/", None, 202),
        ("get", f"/api/sessions/{session.uuid}/summary-status/", None, 200),
    ]


@pytest.mark.parametrize("index", range(6))
def test_isolation(api_client, other_client, staff_client, anon_client, session, summary, index):
    method, url, payload, ok = _endpoints(session, summary)[index]

    def call(client):
        return getattr(client, method)(url, payload, format="json")

    assert call(other_client).status_code == 404
    assert call(anon_client).status_code in (401, 403)
    summary.refresh_from_db()
    assert not summary.curated
    assert call(api_client).status_code == ok
    assert call(staff_client).status_code == ok


def test_staff_can_write_a_row_in_any_session(staff_client, staff_user, session, made):
    payload = {"session": str(session.uuid), "content": "x", "first_episode_id": made[0].pk, "last_episode_id": made[0].pk}
    assert staff_client.post("/api/summaries/", payload, format="json").status_code == 201
    assert Summary.objects.get().curated_by == staff_user


def test_other_session_rows_do_not_leak_into_the_chain(api_client, session, made):
    stranger = ChatSessionFactory()
    foreign = EpisodeFactory(session=stranger)
    SummaryFactory(session=stranger, first_episode_id=foreign.pk, last_episode_id=foreign.pk)
    assert api_client.get(f"/api/sessions/{session.uuid}/summaries/").json()["results"] == []
