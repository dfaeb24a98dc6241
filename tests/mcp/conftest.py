"""The MCP server as real processes (``manage.py mcp --http`` and ``manage.py
mcp`` over stdio) on a SQLite database of the test's own, driven by the
``mcp`` SDK's own client."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.process_support import PROJECT_ROOT, free_port, run_python, start_logged, stop_process, wait_until
from tests.shared_store.servers import prepare, server_env

#: Made in the server's database before it starts: ann's sessions for alice, bob
#: and herself, her keys (one bound to alice), zed's key; then a shared session
#: of alice's and ann's notes: alice's (shared), bob's, and one of alice's
#: session-scoped session alone.
SETUP = """
from nexus.api.keys.services import key_create
from notes.services import note_create
from sessions_app.services import episode_create, session_create
session_of_alice = None
for end_user, fact in (("alice", "alice keeps bees on the roof"), ("bob", "bob keeps bees in the garden"),
                       ("", "ann keeps bees at the allotment")):
    session = session_create(owner=ann, title=f"of {end_user or 'ann'}", end_user=end_user)
    session_of_alice = session if end_user == "alice" else session_of_alice
    episode_create(session=session, user_input=f"Remember: {fact}.", response="Noted.")
    print(session.uuid)
other = get_user_model().objects.create_user("zed", password="zed-password-1")
print(key_create(user=ann, name="agent")[1])
print(key_create(user=ann, name="alice's app", end_user="alice")[1])
print(key_create(user=other, name="zed's agent")[1])
print(key_create(user=ann, name="to revoke")[1])
print(session_create(owner=ann, title="alice, shared", end_user="alice", memory_scope="shared").uuid)
print(note_create(owner=ann, kind="fact", text="alice keeps bees", end_user="alice").pk)
print(note_create(owner=ann, kind="preference", text="bob likes short answers", end_user="bob").pk)
print(note_create(owner=ann, kind="instruction", text="answer in verse", session=session_of_alice).pk)
"""


@dataclass
class McpWorld:
    env: dict[str, str]
    url: str
    sessions: dict[str, str]  # end user ("" for ann) -> session uuid
    key: str
    alice_key: str
    other_key: str
    revocable_key: str
    shared_session: str  # alice's shared session (the others are session-scoped)
    notes: dict[str, int]  # "alice" (shared), "bob", "scoped" (alice's session-scoped session's) -> id

    def http(self, key: str | None) -> Client:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return Client(
            streamable_http_client(self.url, http_client=httpx2.AsyncClient(headers=headers, timeout=30))
        )

    def stdio(self, key: str, **settings: str) -> Client:
        env = {**self.env, "NEXUS_API_KEY": key, **settings}
        return Client(
            StdioServerParameters(
                command=sys.executable, args=["manage.py", "mcp"], env=env, cwd=str(PROJECT_ROOT)
            )
        )

    def new_key(self, username: str) -> str:
        """A key of a new user of its own (whose rate nothing else has used)."""
        done = run_python(
            "-c",
            "import django; django.setup()\n"
            "from django.contrib.auth import get_user_model\n"
            "from nexus.api.keys.services import key_create\n"
            f"user = get_user_model().objects.create_user({username!r}, password='pw-{username}-1')\n"
            "print(key_create(user=user, name='agent')[1])\n",
            env=self.env,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def revoke(self, key: str) -> None:
        """Revoke ``key`` from another process, as the keys page does."""
        done = run_python(
            "-c",
            "import django; django.setup()\n"
            "from nexus.api.keys.models import ApiKey, key_digest\n"
            "from nexus.api.keys.services import key_revoke\n"
            f"key_revoke(key=ApiKey.objects.get(digest=key_digest({key!r})))\n",
            env=self.env,
        )
        assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def mcp_world(tmp_path_factory) -> Iterator[McpWorld]:
    tmp_path: Path = tmp_path_factory.mktemp("mcp")
    port = free_port()
    env = server_env(
        tmp_path, MCP_HOST="127.0.0.1", MCP_PORT=str(port), DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost"
    )
    made = prepare(env, SETUP).split()
    uuids, (shared_session, *note_ids) = made[:3], made[7:]
    key, alice_key, other_key, revocable_key = made[3:7]
    process = start_logged(
        [sys.executable, "manage.py", "mcp", "--http"], log_path=tmp_path / "mcp.log", env=env
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_until(
            lambda: process.poll() is None and httpx.post(url, timeout=2).status_code == 401,
            timeout=90,
            message="the MCP server to answer",
            retry_on=(httpx.HTTPError,),
        )
        sessions = dict(zip(("alice", "bob", ""), uuids, strict=True))
        notes = dict(zip(("alice", "bob", "scoped"), map(int, note_ids), strict=True))
        yield McpWorld(env, url, sessions, key, alice_key, other_key, revocable_key, shared_session, notes)
    finally:
        stop_process(process, group=True)
