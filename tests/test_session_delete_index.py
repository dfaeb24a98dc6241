"""Deleting a session takes its words out of the full-text index's data at
once (SQLite): FTS5 keeps a deleted row's terms in its segments, behind a
tombstone, until they are merged; a deleted conversation's words must not
stay readable in the database file. (PostgreSQL keeps the terms in the
episode row itself, so they go with it.)"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client

from tests.factories import ChatSessionFactory, EpisodeFactory

pytestmark = pytest.mark.django_db(transaction=True)

MARKER = "qzxjvw"  # a word no stemmer changes


def index_data_holds(word: str) -> bool:
    """Whether any FTS5 shadow table (the segments, their index, the sizes)
    holds ``word``'s bytes. A segment stores a term after the one before it
    by the suffix they do not share, so the first letter is left out."""
    word = word[1:]
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'sessions_app_episode_fts_%'")
        tables = [row[0] for row in cursor.fetchall()]
        for table in tables:
            cursor.execute(f'SELECT * FROM "{table}"')
            for row in cursor.fetchall():
                for value in row:
                    data = bytes(value) if isinstance(value, (bytes, memoryview)) else str(value).encode()
                    if word.encode() in data:
                        return True
    return False


@pytest.fixture(autouse=True)
def sqlite_only():
    if connection.vendor != "sqlite":
        pytest.skip("the FTS5 index is SQLite's")


def planted(owner):
    kept = ChatSessionFactory(owner=owner, title="Kept")
    for n in range(30):
        EpisodeFactory(session=kept, user_input=f"garden note {n}", response="tomatoes and beans")
    gone = ChatSessionFactory(owner=owner, title="Gone")
    for n in range(3):
        EpisodeFactory(session=gone, user_input=f"the {MARKER} secret {n}", response=f"keep {MARKER} hidden")
    assert index_data_holds(MARKER)
    return kept, gone


def test_a_session_deleted_through_the_api_leaves_no_word_in_the_index(api_client, owner):
    kept, gone = planted(owner)
    assert api_client.delete(f"/api/sessions/{gone.uuid}/").status_code == 204
    assert not index_data_holds(MARKER)
    found = api_client.get("/api/search/", {"q": "tomatoes"}).json()["results"]
    assert len(found) == 20  # the rest of the index still answers


def test_a_session_deleted_on_its_page_leaves_no_word_in_the_index(owner):
    _, gone = planted(owner)
    browser = Client()
    browser.force_login(owner)
    response = browser.post(f"/sessions/{gone.uuid}/delete/")
    assert response.status_code == 302
    assert not index_data_holds(MARKER)


def test_the_merge_runs_after_the_deleting_transaction_commits(api_client, owner):
    """The merge rewrites the whole index: it never runs holding the delete's write lock."""
    _, gone = planted(owner)
    merges = []

    def watch(execute, sql, params, many, context):
        if "'optimize'" in sql:
            merges.append(connection.in_atomic_block)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(watch):
        assert api_client.delete(f"/api/sessions/{gone.uuid}/").status_code == 204
    assert merges == [False]
    assert not index_data_holds(MARKER)
