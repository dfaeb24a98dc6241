"""The sessions bench/recall_split.py reads: a person's history split by day,
and the marked sessions beside it that no context of theirs may show.

Each day the person chatted is one shared session of their end user
(``memory_scope: "shared"``), replayed with its dates as
bench/recall_replay.py replays. Beside it, copies of the exchanges that
answer the person's questions (so a context that leaked would want them),
every message ending in a marker word: in a shared session of another end
user of the same owner, in a session-scoped session of the same end user,
and in a shared session of the same end user id under another owner. All
are titled by the conversation's key and hash and reused while complete.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.recall_data import DATE, Conversation, Exchange, fingerprint, holds
from bench.recall_replay import USERNAME, Api, Replay, expect, post_session

OTHER_OWNER = "bench-recall-other"
#: Where a marked copy lives -> its marker word (never said anywhere else).
MARKERS = {
    "another end user": "zqxotherperson",
    "a session-scoped session": "zqxscopedsession",
    "another owner": "zqxotherowner",
}


@dataclass(frozen=True, slots=True)
class Split:
    title: str  # the prefix of every title of the conversation's split sessions
    end_user: str
    owner: str = USERNAME


@dataclass(frozen=True, slots=True)
class Planned:
    api: Api
    title: str
    end_user: str
    scope: str
    days: list[list[Exchange]]


def answering(conversation: Conversation) -> list[Exchange]:
    """The exchanges that hold an answer word of a question (dates aside: every day holds its own)."""
    questions = [q for q in conversation.questions if q.kind != DATE]
    return [
        e
        for e in conversation.exchanges
        if any(holds(q, f"{e.user_input} {e.response}".lower()) for q in questions)
    ]


def marked(exchanges: list[Exchange], marker: str) -> list[Exchange]:
    return [
        Exchange(f"{e.user_input} ({marker})", f"{e.response} ({marker})", e.created_at) for e in exchanges
    ]


def plan(api: Api, other: Api, conversation: Conversation, split: Split) -> list[Planned]:
    days = [
        Planned(api, f"{split.title}, day {n}", split.end_user, "shared", [day])
        for n, day in enumerate(conversation.sessions, 1)
    ]
    copies = answering(conversation)
    where = dict(zip(MARKERS, (
        (api, f"{split.end_user} (someone else)", "shared"),
        (api, split.end_user, "session"),
        (other, split.end_user, "shared"),
    ), strict=True))  # fmt: skip
    return days + [
        Planned(owner, f"{split.title}, marked: {name}", end_user, scope, [marked(copies, MARKERS[name])])
        for name, (owner, end_user, scope) in where.items()
    ]


def complete(planned: list[Planned], prefix: str) -> bool:
    """Whether every planned session exists once, with all its episodes."""
    from django.db.models import Count

    from sessions_app.models import ChatSession

    found = ChatSession.objects.filter(title__startswith=prefix).exclude(title__contains=", asking (")
    sizes = {s.title: s.size for s in found.annotate(size=Count("episodes"))}
    wanted = {p.title: sum(len(day) for day in p.days) for p in planned}
    return sizes == wanted and found.count() == len(wanted)


def split_sessions(api: Api, conversation: Conversation, fresh: bool, replay: Replay) -> Split:
    """The person's split sessions and the marked ones, replayed unless complete."""
    from sessions_app.models import ChatSession
    from sessions_app.services import session_delete

    key = fingerprint([conversation])
    split = Split(f"recall split bench, {conversation.key}, {key}", f"{conversation.user_name} ({key})")
    planned = plan(api, Api(OTHER_OWNER), conversation, split)
    if not fresh and complete(planned, split.title):
        return split
    for stale in ChatSession.objects.filter(title__startswith=split.title):
        session_delete(session=stale)
    for session in planned:
        body = {"title": session.title, "end_user": session.end_user, "memory_scope": session.scope}
        created = expect(*session.api.post("/api/sessions/", body), 201, "POST /api/sessions/")
        if created.get("memory_scope") != session.scope:
            raise SystemExit("the sessions API does not take end_user and memory_scope: nothing to measure")
        for day in session.days:
            post_session(session.api, created["id"], day, replay)
    return split
