"""Episode vectors: written by the task after the writes, read within a bound,
gone with their session."""

from __future__ import annotations

import pytest

from sessions_app.models import ChatSession, EpisodeVector
from sessions_app.semantic import closeness, embed_pending, question_vector
from sessions_app.semantic.neighbours import forget
from sessions_app.semantic.vectors import VECTOR_BYTES
from sessions_app.services import episodes_bulk_create
from tests.factories import ChatSessionFactory, EpisodeFactory

pytestmark = pytest.mark.django_db

#: A recent window's worth of exchanges (CONTEXT_RECENT_EPISODES's default).
WINDOW = 8


def exchange(n: int) -> dict[str, str]:
    return {
        "user_input": f"Small talk number {n} about the weather.",
        "response": f"Reply {n}: mild and dry.",
    }


def test_embed_pending_writes_what_is_missing_in_id_order_and_only_once(session):
    episodes = episodes_bulk_create(session=session, items=[exchange(n) for n in range(5)])
    assert embed_pending(session.pk, limit=3) == 3
    assert embed_pending(session.pk) == 2
    assert embed_pending(session.pk) == 0
    stored = list(EpisodeVector.objects.filter(session=session).order_by("episode_id"))
    assert [v.episode_id for v in stored] == [e.pk for e in episodes]
    assert [v.token_count for v in stored] == [e.token_count for e in episodes]
    # Each row holds the whole exchange's vector, then its passages' (two here: one a side).
    assert all(len(bytes(v.vector)) == 3 * VECTOR_BYTES for v in stored)


def test_nearest_ranks_by_meaning_excludes_and_is_bounded(session):
    items = [exchange(n) for n in range(12)]
    items[2] = {"user_input": "The wifi password at the cabin is heron42.", "response": "Noted."}
    episodes = episodes_bulk_create(session=session, items=items)
    embed_pending(session.pk)
    session.refresh_from_db()
    vector = question_vector("What do I type to get online at the lake house?")

    def ask(limit, **kwargs):
        found = closeness(
            session_pk=session.pk, newest_episode_id=session.cached_last_episode_id, vector=vector, **kwargs
        ).nearest(limit)
        return [n.episode_id for n in found]

    assert ask(limit=3, scan=100)[0] == episodes[2].pk
    assert len(ask(limit=3, scan=100)) == 3
    assert episodes[2].pk not in ask(limit=3, scan=100, exclude_ids=[episodes[2].pk])
    # Only the newest ``scan`` vectors are compared: the fact is older than that.
    forget()
    assert set(ask(limit=20, scan=5)) == {e.pk for e in episodes[-5:]}


def test_the_kept_copy_picks_up_new_vectors_and_drops_a_stale_one(session):
    first = episodes_bulk_create(session=session, items=[exchange(n) for n in range(3)])
    embed_pending(session.pk)
    session.refresh_from_db()
    vector = question_vector("weather")

    def ids(newest):
        return {
            n.episode_id
            for n in closeness(
                session_pk=session.pk, newest_episode_id=newest, vector=vector, scan=100
            ).nearest(50)
        }

    assert ids(session.cached_last_episode_id) == {e.pk for e in first}
    more = episodes_bulk_create(session=session, items=[exchange(n) for n in range(3, 5)])
    embed_pending(session.pk)
    session.refresh_from_db()
    assert ids(session.cached_last_episode_id) == {e.pk for e in first + more}
    # A counter older than what is kept means the kept copy is not this session's: read again.
    EpisodeVector.objects.filter(episode_id=more[-1].pk).delete()
    assert ids(first[-1].pk) == {e.pk for e in first + more[:-1]}


def test_vectors_go_with_their_session(session, api_client):
    episodes_bulk_create(session=session, items=[exchange(n) for n in range(4)])
    embed_pending(session.pk)
    kept = ChatSessionFactory(owner=session.owner)
    EpisodeFactory(session=kept)
    embed_pending(kept.pk)
    response = api_client.delete(f"/api/sessions/{session.uuid}/")
    assert response.status_code == 204
    assert not EpisodeVector.objects.filter(session_id=session.pk).exists()
    assert EpisodeVector.objects.filter(session_id=kept.pk).count() == 1


def post(api_client, url, body, commits):
    with commits(execute=True):
        response = api_client.post(url, body, format="json")
    assert response.status_code == 201
    return EpisodeVector.objects.filter(session__uuid=url.split("/")[3]).count()


def test_api_writes_embed_after_the_response(
    semantic, session, api_client, django_capture_on_commit_callbacks
):
    url = f"/api/sessions/{session.uuid}/episodes/"
    counts = [post(api_client, url, exchange(n), django_capture_on_commit_callbacks) for n in range(WINDOW)]
    # Every single write sends the task, which encodes all that is missing:
    # an episode may leave the recent window with the next write. With no
    # broker it runs once the response has been sent.
    assert counts == list(range(1, WINDOW + 1))
    assert (
        post(api_client, url, [exchange(n) for n in range(3)], django_capture_on_commit_callbacks)
        == WINDOW + 3
    )


def test_nothing_is_encoded_when_retrieval_by_meaning_is_off(
    session, api_client, django_capture_on_commit_callbacks
):
    url = f"/api/sessions/{session.uuid}/episodes/"
    for n in range(WINDOW):
        post(api_client, url, exchange(n), django_capture_on_commit_callbacks)
    assert post(api_client, url, [exchange(n) for n in range(3)], django_capture_on_commit_callbacks) == 0


def test_erasing_a_users_memory_removes_their_vectors_and_keeps_others(session, other_user):
    from summaries.erasure import user_memory_erase

    episodes_bulk_create(session=session, items=[exchange(n) for n in range(3)])
    embed_pending(session.pk)
    theirs = ChatSessionFactory(owner=other_user)
    episodes_bulk_create(session=theirs, items=[exchange(n) for n in range(2)])
    embed_pending(theirs.pk)
    user_memory_erase(user=session.owner)
    assert not EpisodeVector.objects.filter(session_id=session.pk).exists()
    assert EpisodeVector.objects.filter(session=theirs).count() == 2


def test_a_session_deleted_while_its_episodes_are_encoded_ends_the_run(session, monkeypatch):
    from sessions_app.semantic import store

    episodes_bulk_create(session=session, items=[exchange(n) for n in range(3)])
    real_encoder = store.encoder

    def encoder_then_delete():
        ChatSession.objects.filter(pk=session.pk).delete()
        return real_encoder()

    monkeypatch.setattr(store, "encoder", encoder_then_delete)
    assert embed_pending(session.pk) == 0
    assert not EpisodeVector.objects.exists()


def test_the_embed_episodes_command_fills_in_history(semantic, session, other_user):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    episodes_bulk_create(session=session, items=[exchange(n) for n in range(3)])
    theirs = ChatSessionFactory(owner=other_user)
    episodes_bulk_create(session=theirs, items=[exchange(n) for n in range(2)])
    call_command("embed_episodes", "--session", str(theirs.uuid))
    assert EpisodeVector.objects.filter(session=theirs).count() == 2
    assert not EpisodeVector.objects.filter(session=session).exists()
    call_command("embed_episodes")
    assert EpisodeVector.objects.count() == 5
    with pytest.raises(CommandError, match="No session"):
        call_command("embed_episodes", "--session", "00000000-0000-0000-0000-000000000000")
    with pytest.raises(CommandError, match="not a session uuid"):
        call_command("embed_episodes", "--session", "nope")
    semantic.CONTEXT_SEMANTIC_CANDIDATES = 0
    with pytest.raises(CommandError, match="CONTEXT_SEMANTIC_CANDIDATES"):
        call_command("embed_episodes")


def test_more_new_vectors_than_are_compared_reads_the_newest_again(session):
    first = episodes_bulk_create(session=session, items=[exchange(n) for n in range(3)])
    embed_pending(session.pk)
    session.refresh_from_db()
    vector = question_vector("weather")

    def ids():
        session.refresh_from_db()
        found = closeness(
            session_pk=session.pk,
            newest_episode_id=session.cached_last_episode_id,
            vector=vector,
            scan=3,
        ).nearest(50)
        return {n.episode_id for n in found}

    assert ids() == {e.pk for e in first}
    more = episodes_bulk_create(session=session, items=[exchange(n) for n in range(3, 8)])
    embed_pending(session.pk)
    assert ids() == {e.pk for e in more[-3:]}


@pytest.mark.django_db(transaction=True)
def test_a_single_write_reaches_the_store_through_the_embedded_worker(semantic, session, api_client):
    """One write, no broker: the encoding goes to the web process's worker
    (not the request) and its vectors are stored, each passage with its span."""
    from nexus import embedded_worker
    from nexus.celery import start_embedded_worker
    from sessions_app.semantic.vectors import spans_of, to_matrix
    from tests.process_support import wait_until

    assert start_embedded_worker()
    try:
        response = api_client.post(
            f"/api/sessions/{session.uuid}/episodes/",
            {"user_input": "My sister moved to Graz.", "response": "Graz is lovely. Trams everywhere."},
            format="json",
        )
        assert response.status_code == 201
        wait_until(
            lambda: EpisodeVector.objects.filter(session=session).exists(),
            timeout=30,
            message="the embedded worker to encode the one write",
        )
    finally:
        embedded_worker.worker.stop(timeout=10)
    row = EpisodeVector.objects.get(session=session)
    assert row.episode_id == response.json()["id"]
    assert len(to_matrix([row.vector])[0]) == 3
    assert spans_of(row.spans).tolist() == [[0, 24], [24, 57]]
    session.refresh_from_db()
    assert session.encoded_through_position == session.cached_last_position == 1
