"""A curated summary card names who edited it: "Edited by you" on the
owner's own edits, on the page and in the cards the script draws from the API."""

from __future__ import annotations

import pytest
from django.test import Client

from summaries.curation import summary_curate
from summaries.models import SummaryRevision
from tests.factories import ChatSessionFactory, EpisodeFactory, SummaryFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def curated_rows(owner, staff_user):
    session = ChatSessionFactory(owner=owner)
    episodes = EpisodeFactory.create_batch(4, session=session)
    mine = SummaryFactory(session=session, first_episode_id=episodes[0].pk, last_episode_id=episodes[1].pk)
    theirs = SummaryFactory(session=session, first_episode_id=episodes[2].pk, last_episode_id=episodes[3].pk)
    summary_curate(summary=mine, content="Edited by the owner.", actor=owner, source=SummaryRevision.Source.API_EDIT)
    summary_curate(
        summary=theirs, content="Edited by staff.", actor=staff_user, source=SummaryRevision.Source.API_EDIT
    )
    return session


def test_the_chat_page_says_edited_by_you_on_the_owners_edit(owner, curated_rows):
    client = Client()
    client.force_login(owner)
    html = client.get(f"/sessions/{curated_rows.uuid}/").content.decode()
    assert html.count(">Edited by you</span>") == 1
    assert html.count(">Edited by staff</span>") == 1


def test_the_summary_api_tells_the_script_who_curated(api_client, curated_rows):
    rows = api_client.get(f"/api/sessions/{curated_rows.uuid}/summaries/").json()["results"]
    assert [(r["curated_by_you"], r["curated_by_staff"]) for r in rows] == [(True, False), (False, True)]
    one = api_client.get(f"/api/summaries/{rows[0]['id']}/").json()
    assert one["curated_by_you"] is True


def test_the_script_draws_the_same_words():
    from pathlib import Path

    script = (Path(__file__).resolve().parents[2] / "static" / "nexus" / "chat.js").read_text()
    assert "curated_by_you" in script and '"Edited by " + by' in script
