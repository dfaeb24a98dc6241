"""The note tools through the SDK's own client, over streamable HTTP and
stdio, against live server processes: add, list, change and delete, the
REST API's validation, and its isolation (another owner's notes, a key
bound to an end user)."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from tests.mcp.test_mcp_server import call, not_found, run

NO_NOTE = "No such note."
UNKNOWN_SESSION = "00000000-0000-4000-8000-000000000000"


def no_note(answer: tuple[bool, Any]) -> bool:
    failed, message = answer
    return failed and message.endswith(NO_NOTE)


def texts(answer: tuple[bool, Any]) -> set[str]:
    failed, listed = answer
    assert not failed, listed
    return {note["text"] for note in listed["notes"]}


async def note_round_trip(client: Client, world: Any, person: str) -> dict[str, Any]:
    """Add a note about ``person``, list it, change it, delete it; then the refusals."""
    async with client:
        got: dict[str, Any] = {"names": {tool.name for tool in (await client.list_tools()).tools}}
        failed, added = await call(
            client, "add_note", kind="preference", text="Short   answers.", end_user=person
        )
        assert not failed, added
        got["added"] = added
        got["listed"] = await call(client, "list_notes", end_user=person)
        got["updated"] = await call(
            client, "update_note", id=added["id"], text="Answers in French.", kind="instruction"
        )
        got["listed_updated"] = await call(client, "list_notes", end_user=person)
        got["deleted"] = await call(client, "delete_note", id=added["id"])
        got["listed_deleted"] = await call(client, "list_notes", end_user=person)
        got["update_deleted"] = await call(client, "update_note", id=added["id"], text="again")
        got["delete_deleted"] = await call(client, "delete_note", id=added["id"])
        # A session-scoped session's note is that session's alone.
        got["scoped"] = await call(
            client, "add_note", kind="fact", text="Has a red kayak.", session=world.sessions[""]
        )
        got["in_scoped"] = await call(client, "list_notes", session=world.sessions[""])
        got["in_shared"] = await call(client, "list_notes", session=world.shared_session)
        got["in_alice_scoped"] = await call(client, "list_notes", session=world.sessions["alice"])
        got["bad_kind"] = await call(client, "add_note", kind="wish", text="x", end_user=person)
        got["blank_text"] = await call(client, "add_note", kind="fact", text="   ", end_user=person)
        got["too_long"] = await call(client, "add_note", kind="fact", text="x" * 501, end_user=person)
        got["no_session"] = await call(client, "add_note", kind="fact", text="x", session=UNKNOWN_SESSION)
        got["no_change"] = await call(client, "update_note", id=world.notes["alice"])
        got["both"] = await call(client, "list_notes", end_user="alice", session=world.shared_session)
        got["bad_limit"] = await call(client, "list_notes", limit=0)
        got["unknown_id"] = await call(client, "delete_note", id=10**12)
        return got


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_a_note_added_listed_changed_and_deleted(mcp_world, transport):
    person = f"carol over {transport}"
    got = run(note_round_trip, getattr(mcp_world, transport)(mcp_world.key), mcp_world, person)
    assert {"list_notes", "add_note", "update_note", "delete_note"} <= got["names"]
    added = got["added"]
    assert (added["kind"], added["text"], added["end_user"]) == ("preference", "Short answers.", person)
    assert (added["memory_scope"], added["session"], added["curated"]) == ("shared", None, True)
    assert got["listed"] == (False, {"notes": [added]})
    failed, updated = got["updated"]
    assert not failed, updated
    assert (updated["id"], updated["kind"], updated["text"]) == (
        added["id"],
        "instruction",
        "Answers in French.",
    )
    assert got["listed_updated"] == (False, {"notes": [updated]})
    assert got["deleted"] == (False, {"deleted": added["id"]})
    assert got["listed_deleted"] == (False, {"notes": []})
    assert no_note(got["update_deleted"]) and no_note(got["delete_deleted"])

    failed, scoped = got["scoped"]
    assert not failed, scoped
    assert (scoped["memory_scope"], scoped["session"], scoped["end_user"]) == (
        "session",
        mcp_world.sessions[""],
        "",
    )
    assert "Has a red kayak." in texts(got["in_scoped"])
    # alice's shared session sees her shared note, not bob's nor a session-scoped session's.
    assert texts(got["in_shared"]) >= {"alice keeps bees"}
    assert texts(got["in_shared"]).isdisjoint(
        {"bob likes short answers", "answer in verse", "Has a red kayak."}
    )
    assert "answer in verse" in texts(got["in_alice_scoped"])
    assert "alice keeps bees" not in texts(got["in_alice_scoped"])

    for name, field in (
        ("bad_kind", "kind"),
        ("blank_text", "text"),
        ("too_long", "text"),
        ("no_session", "session"),
        ("no_change", "text"),
        ("both", "session"),
        ("bad_limit", "limit"),
    ):
        failed, message = got[name]
        assert failed and f"Invalid arguments: {field}: " in message, (name, message)
    assert got["no_session"][1].endswith("No such session.")
    assert no_note(got["unknown_id"])


async def other_owners_view(client: Client, world: Any) -> dict[str, Any]:
    async with client:
        alice, bob = world.notes["alice"], world.notes["bob"]
        return {
            "own": await call(client, "add_note", kind="fact", text="Zed's own note.", end_user="alice"),
            "listed": await call(client, "list_notes"),
            "listed_alice": await call(client, "list_notes", end_user="alice"),
            "in_shared": await call(client, "list_notes", session=world.shared_session),
            "update": await call(client, "update_note", id=alice, text="Zed was here."),
            "delete": await call(client, "delete_note", id=bob),
            "add": await call(
                client, "add_note", kind="fact", text="Zed was here.", session=world.shared_session
            ),
        }


async def ann_notes(client: Client) -> tuple[bool, Any]:
    async with client:
        return await call(client, "list_notes")


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_another_owners_notes_are_not_found(mcp_world, transport):
    got = run(other_owners_view, getattr(mcp_world, transport)(mcp_world.other_key), mcp_world)
    failed, own = got["own"]
    assert not failed, own
    assert texts(got["listed"]) == texts(got["listed_alice"]) == {"Zed's own note."}
    assert not_found(got["in_shared"])
    assert no_note(got["update"]) and no_note(got["delete"])
    failed, message = got["add"]
    assert failed and message.endswith("Invalid arguments: session: No such session.")
    # ann's notes are as they were.
    listed = {note["id"]: note["text"] for note in run(ann_notes, mcp_world.http(mcp_world.key))[1]["notes"]}
    assert listed[mcp_world.notes["alice"]] == "alice keeps bees"
    assert listed[mcp_world.notes["bob"]] == "bob likes short answers"
    assert "Zed's own note." not in listed.values()


async def alice_apps_notes(client: Client, world: Any) -> dict[str, Any]:
    async with client:
        bob = world.notes["bob"]
        got = {
            "listed": await call(client, "list_notes"),
            "listed_bob": await call(client, "list_notes", end_user="bob"),
            "bob_session": await call(client, "list_notes", session=world.sessions["bob"]),
            "in_shared": await call(client, "list_notes", session=world.shared_session),
            "update_bob": await call(client, "update_note", id=bob, text="Alice was here."),
            "delete_bob": await call(client, "delete_note", id=bob),
            "add_bob": await call(client, "add_note", kind="fact", text="Alice was here.", end_user="bob"),
            "add_bob_session": await call(
                client, "add_note", kind="fact", text="Alice was here.", session=world.sessions["bob"]
            ),
            "add": await call(client, "add_note", kind="fact", text="Alice's app wrote this."),
        }
        failed, added = got["add"]
        assert not failed, added
        got["update"] = await call(client, "update_note", id=added["id"], kind="preference")
        got["delete"] = await call(client, "delete_note", id=added["id"])
        return got


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_a_key_bound_to_an_end_user_confines_the_note_tools(mcp_world, transport):
    got = run(alice_apps_notes, getattr(mcp_world, transport)(mcp_world.alice_key), mcp_world)
    failed, listed = got["listed"]
    assert not failed and {note["end_user"] for note in listed["notes"]} == {"alice"}
    assert {mcp_world.notes["alice"], mcp_world.notes["scoped"]} <= {note["id"] for note in listed["notes"]}
    assert got["listed_bob"] == (False, {"notes": []})
    assert not_found(got["bob_session"])
    assert "alice keeps bees" in texts(got["in_shared"])
    assert no_note(got["update_bob"]) and no_note(got["delete_bob"])
    failed, message = got["add_bob"]
    assert failed and "Invalid arguments: end_user: " in message, message
    failed, message = got["add_bob_session"]
    assert failed and message.endswith("Invalid arguments: session: No such session.")
    added = got["add"][1]
    assert (added["end_user"], added["memory_scope"]) == ("alice", "shared")
    failed, updated = got["update"]
    assert not failed and updated["kind"] == "preference"
    assert got["delete"] == (False, {"deleted": added["id"]})
    listed = {note["id"]: note for note in run(ann_notes, mcp_world.http(mcp_world.key))[1]["notes"]}
    assert listed[mcp_world.notes["bob"]]["text"] == "bob likes short answers"
    assert added["id"] not in listed
