"""A regenerate of a row whose regeneration is already queued or running is
coalesced into it: 202 with the state, no second task, no second model call."""

from __future__ import annotations

import pytest

from summaries.tasks import regenerate_summary
from tests.factories import EpisodeFactory, SummaryFactory
from tests.test_summarization_gate import sent  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def summary(session):
    first = EpisodeFactory(session=session)
    last = EpisodeFactory(session=session)
    return SummaryFactory(session=session, first_episode_id=first.pk, last_episode_id=last.pk)


def test_fifty_regenerates_of_one_row_queue_one_task(api_client, summary, sent):  # noqa: F811
    answers = [api_client.post(f"/api/summaries/{summary.pk}/regenerate/") for _ in range(50)]
    assert {a.status_code for a in answers} == {202}
    assert {a.json()["state"] for a in answers} == {"queued"}
    assert sent == [("summaries.tasks.regenerate_summary", {"summary_pk": summary.pk, "actor_pk": summary.session.owner_id})]

    # Once the queued task has run, the row can be regenerated again.
    regenerate_summary.apply(kwargs={"summary_pk": summary.pk})
    assert api_client.post(f"/api/summaries/{summary.pk}/regenerate/").status_code == 202
    assert len(sent) == 2


def test_other_rows_are_not_coalesced(api_client, session, summary, sent):  # noqa: F811
    last = EpisodeFactory(session=session)
    second = SummaryFactory(session=session, first_episode_id=last.pk, last_episode_id=last.pk)
    api_client.post(f"/api/summaries/{summary.pk}/regenerate/")
    api_client.post(f"/api/summaries/{second.pk}/regenerate/")
    assert [kw["summary_pk"] for _, kw in sent] == [summary.pk, second.pk]
