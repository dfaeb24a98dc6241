"""The shared-memory row of ``read_scaling.py``: does a shared session's
context cost the same whether the person has 10 shared sessions or 1,000?

Two people, each a user of their own: F with ``MANY_SHARED`` shared
sessions of ``SHARED_SIZE`` episodes, G with ``FEW_SHARED`` of the same
size, built through the API (``memory_scope: "shared"``), every episode
with vectors (random unit vectors, as ``read_scaling.give_vectors`` writes
them), and each a new shared session of two exchanges whose context is
timed: it reads the person's other chats (``sessions_app.shared_memory``).
"""

from __future__ import annotations

import time
from urllib.parse import urlencode

from django.db import connection

from bench.http_load import post_json
from sessions_app.models import ChatSession

MANY_SHARED = 1_000
FEW_SHARED = 10
SHARED_SIZE = 100
PEOPLE = (("bench-f", MANY_SHARED), ("bench-g", FEW_SHARED))
NEW_TITLE = "New shared chat"


def build_people(port: int, user_headers, episode, give_vectors) -> None:
    """Each person's shared sessions, then the new one; a run cut off goes on where it stopped."""
    for username, count in PEOPLE:
        headers = user_headers(username)
        owned = ChatSession.objects.filter(owner__username=username, memory_scope="shared")
        owned.exclude(cached_episode_count=SHARED_SIZE).exclude(title=NEW_TITLE).delete()  # one half-made
        made = owned.exclude(title=NEW_TITLE).count()
        connection.close()
        started = time.perf_counter()
        for n in range(made, count):
            body = {"title": f"{username} shared {n}", "memory_scope": "shared"}
            status, payload = post_json(port, "/api/sessions/", body, headers)
            assert status == 201, (status, payload)
            items = [episode(n * SHARED_SIZE + k) for k in range(SHARED_SIZE)]
            status, answer = post_json(port, f"/api/sessions/{payload['id']}/episodes/", items, headers)
            assert status == 201, (status, str(answer)[:300])
        if made < count:
            took = time.perf_counter() - started
            print(f"built {username}'s {count - made:,} shared sessions in {took:.0f} s", flush=True)
        if not owned.filter(title=NEW_TITLE).exists():
            status, payload = post_json(
                port, "/api/sessions/", {"title": NEW_TITLE, "memory_scope": "shared"}, headers
            )
            assert status == 201, (status, payload)
            items = [episode(10**6 + k) for k in range(2)]
            status, _ = post_json(port, f"/api/sessions/{payload['id']}/episodes/", items, headers)
            assert status == 201
        for session in owned.iterator():
            give_vectors(session)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")  # the steady state autovacuum keeps


def shared_cases(user_headers, question: str) -> dict:
    """The timed pair: G's new shared session's context against F's."""
    paths = {}
    for username, _ in PEOPLE:
        session = ChatSession.objects.get(owner__username=username, title=NEW_TITLE)
        paths[username] = f"/api/sessions/{session.uuid}/context/?" + urlencode({"question": question})
    name = f"shared context: {MANY_SHARED:,} sessions vs {FEW_SHARED}"
    return {name: ((paths["bench-g"], user_headers("bench-g")), (paths["bench-f"], user_headers("bench-f")))}
