"""Regenerating a curated row over the API: 409 unless the body says
``{"replace_curated": true}``; confirmed, the curated text is kept as a
revision and the row says it replaced a curation. What the request queues
is caught at the broker (``sent``) and then run, as a worker would."""

from __future__ import annotations

import pytest

from summaries.curation import summary_curate
from summaries.models import Summary
from summaries.tasks import regenerate_summary
from tests.factories import EpisodeFactory, SummaryFactory
from tests.test_summarization_gate import sent  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db

STAFF_TEXT = "The user's sister is called Ines; she lives in Porto."


@pytest.fixture
def curated(session, staff_user) -> Summary:
    episodes = EpisodeFactory.create_batch(3, session=session)
    row = SummaryFactory(session=session, first_episode_id=episodes[0].pk, last_episode_id=episodes[-1].pk)
    return summary_curate(summary=row, content=STAFF_TEXT, actor=staff_user)


def regenerate(client, summary: Summary, body, capture):
    with capture(execute=True) as callbacks:
        response = client.post(f"/api/summaries/{summary.pk}/regenerate/", body, format="json")
    return response, callbacks


@pytest.mark.parametrize("body", [None, {}, {"replace_curated": False}])
def test_a_curated_row_answers_409_naming_the_field(
    api_client, curated, body, sent, django_capture_on_commit_callbacks  # noqa: F811
):
    response, callbacks = regenerate(api_client, curated, body, django_capture_on_commit_callbacks)
    assert response.status_code == 409
    answer = response.json()
    assert answer["field"] == "replace_curated"
    assert "curated" in answer["detail"] and "replace_curated: true" in answer["detail"]
    assert callbacks == [] and sent == []
    curated.refresh_from_db()
    assert (curated.content, curated.curated) == (STAFF_TEXT, True)


def test_confirmed_it_is_202_and_the_curated_text_is_kept_as_a_revision(
    staff_client, staff_user, curated, sent, django_capture_on_commit_callbacks  # noqa: F811
):
    confirmed = {"replace_curated": True}
    response, _ = regenerate(staff_client, curated, confirmed, django_capture_on_commit_callbacks)
    assert response.status_code == 202
    assert sent == [
        (
            "summaries.tasks.regenerate_summary",
            {"summary_pk": curated.pk, "actor_pk": staff_user.pk, "replace_curated": True},
        )
    ]

    regenerate_summary.apply(kwargs=sent[0][1])

    row = staff_client.get(f"/api/summaries/{curated.pk}/").json()
    assert row["content"] != STAFF_TEXT
    assert (row["curated"], row["replaced_curation"]) == (False, True)
    revision = curated.revisions.get(source="regenerate")
    assert (revision.content, revision.curated, revision.actor) == (STAFF_TEXT, True, staff_user)


def test_a_curation_again_clears_replaced_curation(
    api_client, curated, sent, django_capture_on_commit_callbacks  # noqa: F811
):
    regenerate(api_client, curated, {"replace_curated": True}, django_capture_on_commit_callbacks)
    regenerate_summary.apply(kwargs=sent[0][1])
    assert Summary.objects.get(pk=curated.pk).replaced_curation

    edited = api_client.patch(
        f"/api/summaries/{curated.pk}/", {"content": "Ines lives in Lisbon now."}, format="json"
    )
    assert edited.status_code == 200
    assert (edited.json()["curated"], edited.json()["replaced_curation"]) == (True, False)


@pytest.mark.parametrize("value", ["true", "yes", 1, 0, None, [], {"x": True}])
def test_a_flag_that_is_not_a_boolean_is_400_naming_it(
    api_client, curated, value, sent, django_capture_on_commit_callbacks  # noqa: F811
):
    response, callbacks = regenerate(
        api_client, curated, {"replace_curated": value}, django_capture_on_commit_callbacks
    )
    assert response.status_code == 400
    assert set(response.json()) == {"replace_curated"}
    assert callbacks == [] and sent == []


def test_a_body_that_is_not_an_object_is_400(api_client, curated, django_capture_on_commit_callbacks):
    response, callbacks = regenerate(api_client, curated, [True], django_capture_on_commit_callbacks)
    assert response.status_code == 400 and callbacks == []


def test_an_uncurated_row_needs_no_confirmation_and_replaces_no_curation(
    api_client, session, sent, django_capture_on_commit_callbacks  # noqa: F811
):
    episodes = EpisodeFactory.create_batch(2, session=session)
    row = SummaryFactory(session=session, first_episode_id=episodes[0].pk, last_episode_id=episodes[-1].pk)
    for body in (None, {"replace_curated": True}):
        response, _ = regenerate(api_client, row, body, django_capture_on_commit_callbacks)
        assert response.status_code == 202
    # Nothing curated to replace: the flag is not passed on, and the second request joined the first.
    plain = {"summary_pk": row.pk, "actor_pk": session.owner_id}
    assert sent == [("summaries.tasks.regenerate_summary", plain)]
    regenerate_summary.apply(kwargs=sent[0][1])
    row.refresh_from_db()
    assert row.revisions.filter(source="regenerate").count() == 1
    assert (row.curated, row.replaced_curation) == (False, False)


def test_another_users_curated_row_is_404_not_409(other_client, curated, django_capture_on_commit_callbacks):
    response, callbacks = regenerate(other_client, curated, None, django_capture_on_commit_callbacks)
    assert response.status_code == 404 and callbacks == []


def test_a_row_curated_after_a_plain_request_is_left_as_it_is(
    api_client, session, staff_user, sent, django_capture_on_commit_callbacks  # noqa: F811
):
    episodes = EpisodeFactory.create_batch(2, session=session)
    row = SummaryFactory(session=session, first_episode_id=episodes[0].pk, last_episode_id=episodes[-1].pk)
    regenerate(api_client, row, None, django_capture_on_commit_callbacks)
    summary_curate(summary=row, content=STAFF_TEXT, actor=staff_user)  # while the task waits

    # A confirmed request is not folded into the plain one still queued.
    response, _ = regenerate(api_client, row, {"replace_curated": True}, django_capture_on_commit_callbacks)
    assert response.status_code == 202
    assert [kwargs.get("replace_curated", False) for _, kwargs in sent] == [False, True]

    regenerate_summary.apply(kwargs=sent[0][1])
    row.refresh_from_db()
    assert (row.content, row.curated) == (STAFF_TEXT, True)
    regenerate_summary.apply(kwargs=sent[1][1])
    row.refresh_from_db()
    assert (row.curated, row.replaced_curation) == (False, True)
    assert row.revisions.get(source="regenerate").content == STAFF_TEXT
