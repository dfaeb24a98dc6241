"""One session's search ranks as its context does: of the episodes holding
the query's words, the one closer in meaning first; never one that holds none."""

from __future__ import annotations

import pytest

from sessions_app.semantic import embed_pending
from sessions_app.semantic.passage_rows import PassageRows
from sessions_app.services import episodes_bulk_create

pytestmark = pytest.mark.django_db


def test_search_orders_the_word_hits_as_the_context_ranks_them_and_adds_no_others(
    semantic, api_client, session
):
    items = [
        {"user_input": f"Shopping list {n}: bread, milk, eggs.", "response": "Noted."} for n in range(20)
    ]
    # Both hold "kestrel" once; the older one, longer, is about the bird.
    items.insert(
        3, {"user_input": "A kestrel hovered over the meadow, hunting voles at dusk.", "response": "Lovely."}
    )
    items.append({"user_input": "Kestrel is the printer's name.", "response": "Ok."})
    items.append({"user_input": "What do raptors eat?", "response": "Mostly rodents."})
    episodes = episodes_bulk_create(session=session, items=items)
    embed_pending(session.pk)
    bird, printer, raptors = episodes[3], episodes[-2], episodes[-1]
    response = api_client.get(f"/api/sessions/{session.uuid}/search/", {"q": "kestrel, the bird of prey"})
    assert response.status_code == 200
    found = [item["episode"]["id"] for item in response.json()["results"]]
    # By words alone the printer's shorter exchange scores higher; its meaning puts the bird first.
    assert found[:2] == [bird.pk, printer.pk]
    # Near in meaning but without a word of the query: the context's, not the search's.
    assert raptors.pk not in found


def test_search_reads_the_passages_of_the_episodes_it_can_list_and_no_others(
    semantic, api_client, session, monkeypatch
):
    items = [
        {"user_input": f"Shopping list {n}: bread, milk, eggs.", "response": "Noted."} for n in range(30)
    ]
    items[5] = {"user_input": "A kestrel hovered over the meadow.", "response": "Lovely."}
    items[17] = {"user_input": "Kestrel is the printer's name.", "response": "Ok."}
    episodes = episodes_bulk_create(session=session, items=items)
    embed_pending(session.pk)
    read: list[set[int]] = []
    plain = PassageRows.read.__func__

    def recording(cls, ids, vector):
        ids = list(ids)
        read.append(set(ids))
        return plain(cls, ids, vector)

    monkeypatch.setattr(PassageRows, "read", classmethod(recording))
    response = api_client.get(f"/api/sessions/{session.uuid}/search/", {"q": "kestrel"})
    assert response.status_code == 200
    assert {item["episode"]["id"] for item in response.json()["results"]} == {episodes[5].pk, episodes[17].pk}
    assert read == [{episodes[5].pk, episodes[17].pk}]
    # The context compares the closest by meaning too.
    read.clear()
    assert (
        api_client.get(f"/api/sessions/{session.uuid}/context/", {"question": "kestrel"}).status_code == 200
    )
    assert len(read) == 1 and read[0] > {episodes[5].pk, episodes[17].pk}
