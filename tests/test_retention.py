"""Retention: ``SESSION_RETENTION_DAYS`` and ``SUMMARY_REVISION_RETENTION_DAYS``,
applied by ``manage.py purge_expired`` and the beat's ``purge_expired`` task."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command
from django.utils import timezone

from sessions_app.models import ChatSession, Episode
from summaries.curation import summary_curate
from summaries.erasure import expired_sessions_purge
from summaries.models import SummaryRevision
from summaries.tasks import purge_expired
from tests.factories import ChatSessionFactory, EpisodeFactory, SummaryFactory

pytestmark = pytest.mark.django_db


def _age(session, days: int) -> None:
    ChatSession.objects.filter(pk=session.pk).update(updated_at=timezone.now() - timedelta(days=days))


def test_sessions_without_a_recent_write_are_purged(owner, settings):
    settings.SUMMARY_THRESHOLD_TOKENS = 10**9
    settings.SESSION_RETENTION_DAYS = 30
    old, fresh = ChatSessionFactory(owner=owner), ChatSessionFactory(owner=owner)
    EpisodeFactory(session=old)
    EpisodeFactory(session=fresh)
    _age(old, 31)
    _age(fresh, 29)
    out = io.StringIO()
    call_command("purge_expired", stdout=out)
    assert "Purged 1 sessions" in out.getvalue()
    assert list(ChatSession.objects.values_list("pk", flat=True)) == [fresh.pk]


def test_a_write_keeps_a_session_and_back_dated_imports_are_kept(owner, settings):
    settings.SUMMARY_THRESHOLD_TOKENS = 10**9
    settings.SESSION_RETENTION_DAYS = 30
    session = ChatSessionFactory(owner=owner)
    _age(session, 60)
    EpisodeFactory(session=session)  # a write moves updated_at
    imported = ChatSessionFactory(owner=owner)
    EpisodeFactory(session=imported, created_at=timezone.now() - timedelta(days=400))
    assert expired_sessions_purge(days=30).sessions == 0
    assert ChatSession.objects.count() == 2


def test_unset_keeps_everything(owner, settings):
    settings.SESSION_RETENTION_DAYS = 0
    settings.SUMMARY_REVISION_RETENTION_DAYS = 0
    session = ChatSessionFactory(owner=owner)
    _age(session, 10_000)
    assert purge_expired() == {"sessions": 0, "revisions": 0}
    assert ChatSession.objects.count() == 1


def test_purge_runs_in_batches(owner, settings):
    sessions = [ChatSessionFactory(owner=owner) for _ in range(5)]
    for s in sessions:
        _age(s, 100)
    assert expired_sessions_purge(days=30, batch_size=2).sessions == 5
    assert not Episode.objects.exists()


def test_old_revisions_are_pruned(owner, settings):
    settings.SUMMARY_THRESHOLD_TOKENS = 10**9
    settings.SUMMARY_REVISION_RETENTION_DAYS = 7
    session = ChatSessionFactory(owner=owner)
    ep = EpisodeFactory(session=session)
    row = SummaryFactory(session=session, content="v1", first_episode_id=ep.pk, last_episode_id=ep.pk)
    summary_curate(summary=row, content="v2", actor=owner)
    summary_curate(summary=row, content="v3", actor=owner)
    first = SummaryRevision.objects.order_by("pk").first()
    SummaryRevision.objects.filter(pk=first.pk).update(created_at=timezone.now() - timedelta(days=8))
    assert purge_expired() == {"sessions": 0, "revisions": 1}
    assert SummaryRevision.objects.count() == 1


def test_the_beat_runs_the_purge():
    entry = django_settings.CELERY_BEAT_SCHEDULE["retention-purge"]
    assert entry["task"] == "summaries.tasks.purge_expired"
