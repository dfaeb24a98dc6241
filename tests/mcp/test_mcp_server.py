"""The MCP server through the SDK's own client, over streamable HTTP and
stdio, against live server processes: the tools, the isolation of the REST
API (another user's sessions, a key bound to an end user), and keys."""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.process_support import run_python

TOOL_NAMES = {
    "search_memory", "get_context", "remember", "list_sessions",
    "list_notes", "add_note", "update_note", "delete_note",
}  # fmt: skip


async def call(client: Client, name: str, **arguments: Any) -> tuple[bool, Any]:
    """(whether the tool failed, its structured answer or its error text)."""
    result = await client.call_tool(name, arguments)
    if result.is_error:
        return True, " ".join(block.text for block in result.content)
    return False, result.structured_content


def not_found(answer: tuple[bool, Any]) -> bool:
    failed, message = answer
    return failed and message.endswith("No such session.")


def run(scenario, *args: Any) -> Any:
    return anyio.run(scenario, *args)


#: What the HTTP server answers a request whose key it refuses (in the body, a
#: JSON-RPC error: the SDK's client raises it as ``MCPError``).
REFUSED = -32001
INVALID_KEY = "Invalid API key."
NO_KEY = "Send a Nexus API key: 'Authorization: Bearer <key>' (over stdio: NEXUS_API_KEY)."


def sdk_error(err: BaseException) -> MCPError:
    """The one ``MCPError`` the SDK's client raised (its task groups wrap it)."""
    while isinstance(err, BaseExceptionGroup):
        assert len(err.exceptions) == 1, repr(err)
        err = err.exceptions[0]
    assert isinstance(err, MCPError), repr(err)
    return err


async def memory_round_trip(client: Client) -> dict[str, Any]:
    """Store two exchanges in a new session, then read them back every way."""
    async with client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        failed, first = await call(
            client, "remember", user_input="My canoe is called Wren.", response="A fine name.", title="Canoe"
        )
        assert not failed, first
        session = first["session"]
        failed, second = await call(
            client, "remember", session=session, user_input="It is green.", response="Noted: green."
        )
        assert not failed, second
        _, context = await call(client, "get_context", question="What is my canoe called?", session=session)
        _, found = await call(client, "search_memory", query="canoe Wren", session=session)
        _, person = await call(client, "search_memory", query="canoe Wren", end_user="")
        _, listed = await call(client, "list_sessions")
        nobody = await call(client, "search_memory", query="canoe")
        bad_budget = await call(client, "get_context", question="canoe?", session=session, budget=1)
        return {
            "names": names,
            "session": session,
            "positions": [first["episode"]["position"], second["episode"]["position"]],
            "context": context,
            "found": found,
            "person": person,
            "listed": listed,
            "nobody": nobody,
            "bad_budget": bad_budget,
        }


def check_round_trip(got: dict[str, Any]) -> None:
    assert got["names"] == TOOL_NAMES
    assert got["positions"] == [1, 2]
    assert got["context"]["session"] == got["session"] and "Wren" in got["context"]["prompt"]
    assert [r["session"] for r in got["found"]["results"]] == [got["session"]]
    assert got["session"] in {r["session"] for r in got["person"]["results"]}
    assert got["session"] in [s["id"] for s in got["listed"]["sessions"]]
    failed, message = got["nobody"]
    assert failed and "session" in message and "end_user" in message
    failed, message = got["bad_budget"]
    assert failed and "budget" in message


def test_the_tools_over_streamable_http(mcp_world):
    check_round_trip(run(memory_round_trip, mcp_world.http(mcp_world.key)))


def test_the_tools_over_stdio(mcp_world):
    check_round_trip(run(memory_round_trip, mcp_world.stdio(mcp_world.key)))


async def other_users_view(client: Client, ann_sessions: dict[str, str]) -> dict[str, Any]:
    async with client:
        alice = ann_sessions["alice"]
        return {
            "context": await call(client, "get_context", question="bees", session=alice),
            "search": await call(client, "search_memory", query="bees", session=alice),
            "write": await call(client, "remember", session=alice, user_input="x", response="y"),
            "person": await call(client, "search_memory", query="bees roof", end_user="alice"),
            "listed": await call(client, "list_sessions"),
        }


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_another_users_key_sees_nothing_of_ann(mcp_world, transport):
    client = getattr(mcp_world, transport)(mcp_world.other_key)
    got = run(other_users_view, client, mcp_world.sessions)
    for name in ("context", "search", "write"):
        assert not_found(got[name]), (name, got[name])
    assert got["person"] == (False, {"results": []})
    assert got["listed"] == (False, {"sessions": []})


async def alice_app_view(client: Client, sessions: dict[str, str]) -> dict[str, Any]:
    async with client:
        return {
            "listed": await call(client, "list_sessions"),
            "bob": await call(client, "get_context", question="bees", session=sessions["bob"]),
            "ann": await call(client, "search_memory", query="bees", session=sessions[""]),
            "bob_person": await call(client, "search_memory", query="bees garden", end_user="bob"),
            "alice_person": await call(client, "search_memory", query="bees roof", end_user="alice"),
            "new": await call(client, "remember", user_input="I like figs.", response="Figs, noted."),
            "listed_bob": await call(client, "list_sessions", end_user="bob"),
            "listed_after": await call(client, "list_sessions"),
        }


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_a_key_bound_to_an_end_user_confines_the_tools(mcp_world, transport):
    got = run(alice_app_view, getattr(mcp_world, transport)(mcp_world.alice_key), mcp_world.sessions)
    failed, listed = got["listed"]
    assert not failed and {s["end_user"] for s in listed["sessions"]} == {"alice"}
    assert mcp_world.sessions["alice"] in {s["id"] for s in listed["sessions"]}
    assert not_found(got["bob"]) and not_found(got["ann"])
    assert got["bob_person"] == (False, {"results": []})
    failed, alice = got["alice_person"]
    assert not failed and {r["session"] for r in alice["results"]} == {mcp_world.sessions["alice"]}
    failed, new = got["new"]
    assert not failed
    assert got["listed_bob"] == (False, {"sessions": []})
    made = [s for s in got["listed_after"][1]["sessions"] if s["id"] == new["session"]]
    assert [s["end_user"] for s in made] == ["alice"]


async def first_call(client: Client) -> Any:
    async with client:
        return await call(client, "list_sessions")


def test_http_without_a_working_key_is_refused(mcp_world):
    bare = httpx.post(mcp_world.url, json={}, timeout=10)
    assert (bare.status_code, bare.headers["WWW-Authenticate"]) == (401, "Bearer")
    assert bare.json() == {"jsonrpc": "2.0", "id": None, "error": {"code": REFUSED, "message": NO_KEY}}
    for key, message in (("nxk_not-a-key", INVALID_KEY), (None, NO_KEY)):
        with pytest.raises(BaseExceptionGroup) as refused:
            run(first_call, mcp_world.http(key))
        error = sdk_error(refused.value)
        assert (error.code, error.message) == (REFUSED, message)
    # The account token is for the account, not for an integration.
    token_answer = httpx.post(
        mcp_world.url, json={}, headers={"Authorization": "Bearer 0123456789abcdef0123456789abcdef01234567"}
    )
    assert token_answer.status_code == 401
    assert token_answer.json()["error"] == {"code": REFUSED, "message": NO_KEY}


def test_stdio_without_a_working_key_does_not_start(mcp_world):
    with pytest.raises(BaseExceptionGroup) as refused:  # the process exits before the handshake
        run(first_call, mcp_world.stdio("nxk_not-a-key"))
    error = sdk_error(refused.value)
    assert (error.code, error.message) == (-32000, "Connection closed")
    # What the process says on its way out, for the agent's log.
    for key, message in (("nxk_not-a-key", INVALID_KEY), ("", NO_KEY)):
        exited = run_python("manage.py", "mcp", env={**mcp_world.env, "NEXUS_API_KEY": key}, timeout=60)
        assert exited.returncode == 1
        assert f"CommandError: NEXUS_API_KEY: {message}" in exited.stderr


async def revoked_in_between(world) -> tuple[Any, Any]:
    async with world.http(world.revocable_key) as client:
        before = await call(client, "list_sessions")
        world.revoke(world.revocable_key)
        try:
            after = await call(client, "list_sessions")
        except MCPError as err:  # the next request of the open session is refused
            after = err
    return before, after


def test_a_key_revoked_by_another_process_fails_at_once(mcp_world):
    before, after = run(revoked_in_between, mcp_world)
    assert before[0] is False
    assert isinstance(after, MCPError), after
    assert (after.code, after.message) == (REFUSED, INVALID_KEY)
    answer = httpx.post(
        mcp_world.url, json={}, headers={"Authorization": f"Bearer {mcp_world.revocable_key}"}, timeout=10
    )
    assert answer.status_code == 401
    assert answer.json()["error"] == {"code": REFUSED, "message": INVALID_KEY}


async def calls_at_the_rate(client: Client, count: int) -> list[tuple[bool, Any]]:
    async with client:
        return [await call(client, "list_sessions") for _ in range(count)]


def test_tool_calls_count_against_the_per_user_rate(mcp_world):
    """API_THROTTLE_USER, as on the REST API: past it a tool call is refused
    with a tool error naming the rate and when to try again."""
    key = mcp_world.new_key("rated")
    answers = run(calls_at_the_rate, mcp_world.stdio(key, API_THROTTLE_USER="3/day"), 5)
    assert [failed for failed, _ in answers] == [False, False, False, True, True]
    message = answers[3][1]
    assert message.startswith(
        "Error executing tool list_sessions: Too many requests: this account may make 3/day "
        "(API_THROTTLE_USER, tool calls and REST API requests together); try again in "
    )
    assert message.endswith(" seconds.")
    assert 0 < int(message.rsplit(" ", 2)[-2]) <= 24 * 3600
