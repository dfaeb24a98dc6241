"""What an offline reply shows: what memory would hand a chat model for the message.

Without a chat model nothing uses the memory, so the reply shows it: the
earlier exchanges the context retrieved for the message (its best few, each
labelled with its day and number and trimmed to the sentences nearest the
message) and the gist of the summaries the context holds. It is kept in the
episode's metadata (``offline_memory``), never in its ``response``: the
full-text index, the encoder and summarization read only ``user_input`` and
``response``, so what is quoted here is never remembered a second time.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from sessions_app import shared_memory
from sessions_app.models import ChatSession
from sessions_app.retrieval import begin_ranking
from summaries.context import ContextResult
from summaries.context.layout import Exchange
from summaries.context.sources import episode_texts
from summaries.extractive import parse_summary
from summaries.inference import Completion
from summaries.inference.offline import OFFLINE_MODEL, is_offline_reply
from summaries.models import Summary
from summaries.sentences import closeness_terms, sentences

__all__ = ["METADATA_KEY", "shown_memory", "offline_memory"]

METADATA_KEY = "offline_memory"
#: Retrieved exchanges shown, best first (the context may hold more: ``retrieved_count``).
SHOWN_EXCHANGES = 3
#: Sentences shown of what the user wrote in one exchange, of its reply, and of the summaries.
USER_SENTENCES = 2
REPLY_SENTENCES = 1
GIST_SENTENCES = 3
#: Characters of one shown text at most; a longer one is cut at a word, with "…".
TEXT_CHARACTERS = 300
ELLIPSIS = "…"


def shown_memory(
    *, completion: Completion, session_pk: int, context: ContextResult, question: str
) -> dict[str, Any]:
    """``{"offline_memory": ...}`` for a reply of the offline backend, to be
    merged into its episode's metadata; ``{}`` for a model's reply."""
    if completion.model != OFFLINE_MODEL:
        return {}
    return {METADATA_KEY: offline_memory(session_pk=session_pk, context=context, question=question)}


def offline_memory(*, session_pk: int, context: ContextResult, question: str) -> dict[str, Any]:
    """What ``context`` holds for ``question``, as references to be shown
    shortened (``summaries.offline_memory_shown`` renders them when read)::

        {"quotes": [{"episode": 12, "text": [0, 3], "reply": [1]}],
         "gist": [{"summary": 4, "updated_at": "2023-05-08T10:00:00+00:00", "sentence": 2}],
         "retrieved_count": 5, "recent": 3, "whole": False,
         "newest_in_part": False, "earlier": "quoted"}

    ``quotes`` are the best ``SHOWN_EXCHANGES`` of the ``retrieved_count``
    earlier exchanges the context quotes, each by id with the sentences
    (by number) nearest the question of what the user wrote and of the reply
    (none when the reply was an offline one); ``gist`` a few sentences of its
    summary rows, by row, the row's ``updated_at`` when they were chosen and
    number. No text is kept, so an exchange deleted later leaves none here:
    read, a quote of it is gone. ``recent`` counts the exchanges of its
    recent window (as many as fit in the window's share of the budget, not
    always ``CONTEXT_RECENT_EPISODES``), given in full but for the newest when
    ``newest_in_part`` (alone it was over the share: its newest part is
    given). ``earlier`` says what came of the exchanges before those:
    ``"quoted"`` (some of them went in: retrieved, summarized or in the
    digest), ``"left_out"`` (there are some, and none went in: nothing of
    them was relevant enough, or the message needs no memory) or ``"none"``.
    """
    asked = set(closeness_terms(question))
    shown = (highlights(session_pk, question, context) if context.whole else context.retrieved_by_rank)[
        :SHOWN_EXCHANGES
    ]
    texts = episode_texts(session_pk, shown)
    lent = _lent(session_pk, [pk for pk in shown if pk in context.other_sessions], texts)
    quotes = []
    for pk in shown:
        if pk not in texts:
            continue  # deleted since the context was built
        exchange = texts[pk][0]
        reply = "" if is_offline_reply(exchange.response) else exchange.response
        quotes.append(
            {
                "episode": pk,
                "text": nearest_indices(sentences(exchange.user_input), asked, USER_SENTENCES),
                "reply": nearest_indices(sentences(reply), asked, REPLY_SENTENCES),
                # Another of the person's chats lent it: rendered from there, if still shared.
                **({"lent": True} if pk in lent else {}),
            }
        )
    return {
        "quotes": quotes,
        "retrieved_count": len(quotes) if context.whole else len(context.retrieved),
        "gist": _gist(session_pk, context.summaries, asked),
        "recent": len(context.recent),
        # The whole conversation goes in full: it costs no more than a shorter context would.
        "whole": context.whole,
        # The window's newest exchange is in ``passages`` only when it was cut to its newest part.
        "newest_in_part": bool(context.recent) and context.recent[-1] in context.passages,
        "earlier": earlier_outcome(context),
    }


def earlier_outcome(context: ContextResult) -> str:
    """What came of the exchanges before the recent window: ``"quoted"``,
    ``"left_out"`` or ``"none"`` (see ``offline_memory``)."""
    if context.retrieved or context.summaries or context.digest:
        return "quoted"
    omitted = context.omitted
    lists = ("summaries", "digest", "retrieved", "below_floor", "recent")
    if any(omitted.get(key) for key in lists) or omitted.get("summaries_before_episode"):
        return "left_out"
    return "none"


def highlights(session_pk: int, question: str, context: ContextResult) -> list[int]:
    """When the whole history is the context, the earlier exchanges (before
    the last ``CONTEXT_RECENT_EPISODES``) that rank highest for the question,
    best first: what the model would find first in it."""
    window = settings.CONTEXT_RECENT_EPISODES
    earlier = context.recent[:-window] if window else context.recent
    session = ChatSession.objects.filter(pk=session_pk).first()
    if not earlier or session is None:
        return []
    ranking = begin_ranking(session=session, question=question, limit=SHOWN_EXCHANGES)
    return [hit.episode_id for hit in ranking.hits(context.recent[len(earlier) :])]


def nearest_sentences(text: str, asked: set[str], count: int) -> str:
    """``text`` shortened to the sentences, at most ``count``, sharing the most
    words with ``asked`` (the first ones when none shares any), in their
    order; "…" marks what was left out."""
    found = sentences(text)
    return quote(found, nearest_indices(found, asked, count))


def nearest_indices(found: list[str], asked: set[str], count: int) -> list[int]:
    """The numbers of the sentences of ``found``, at most ``count``, sharing the
    most words with ``asked`` (the first ones when none shares any), in order."""
    ranked = sorted(range(len(found)), key=lambda n: (-_shared(found[n], asked), n))[:count]
    return sorted([n for n in ranked if _shared(found[n], asked)] or ranked)


def quote(found: list[str], picked: list[int]) -> str:
    """The sentences ``picked`` (numbers into ``found``, in order) joined, "…"
    where sentences were left out, cut to ``TEXT_CHARACTERS``; numbers past the
    end (the text was edited since) are skipped."""
    pieces: list[str] = []
    last = -1
    for n in picked:
        if not 0 <= n < len(found) or n <= last:
            continue
        if n > last + 1:
            pieces.append(ELLIPSIS)
        pieces.append(found[n])
        last = n
    if not pieces:
        return ""
    if last < len(found) - 1:
        pieces.append(ELLIPSIS)
    return clip(" ".join(pieces))


def summary_sentences(content: str) -> list[str]:
    """The sentences of a summary row, numbered as ``gist`` numbers them."""
    quoted = parse_summary(content)
    return [*quoted.other, *quoted.user, *quoted.replies]


def _gist(session_pk: int, summary_ids: list[int], asked: set[str]) -> list[dict[str, Any]]:
    """A few sentences of the summary rows, by reference: those sharing words
    with the question, else the first, middle and last (one query)."""
    if not summary_ids:
        return []
    rows = Summary.objects.filter(session_id=session_pk, pk__in=summary_ids)
    rows = rows.order_by("first_episode_id", "pk")
    found: list[tuple[str, dict[str, Any]]] = []
    for pk, content, updated_at in rows.values_list("pk", "content", "updated_at"):
        stamp = updated_at.isoformat()
        for n, sentence in enumerate(summary_sentences(content)):
            found.append((sentence, {"summary": pk, "updated_at": stamp, "sentence": n}))
    if not found:
        return []
    related = [n for n in range(len(found)) if _shared(found[n][0], asked)]
    if related:
        kept = sorted(sorted(related, key=lambda n: (-_shared(found[n][0], asked), n))[:GIST_SENTENCES])
    else:
        kept = sorted({0, len(found) // 2, len(found) - 1})[:GIST_SENTENCES]
    return [found[n][1] for n in kept]


def _shared(sentence: str, asked: set[str]) -> int:
    return len(asked.intersection(closeness_terms(sentence)))


def clip(text: str, *, limit: int = TEXT_CHARACTERS) -> str:
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0].rstrip(" ,;:")
    return cut.removesuffix(ELLIPSIS).rstrip() + " " + ELLIPSIS


def _lent(session_pk: int, ids: list[int], texts: dict) -> set[int]:
    """The exchanges of ``ids`` that the person's other shared chats lent,
    read as the context read them (``shared_memory.lent_texts``) into
    ``texts``."""
    if not ids:
        return set()
    session = ChatSession.objects.get(pk=session_pk)
    for pk, (row, _, _) in shared_memory.lent_texts(session, ids).items():
        texts[pk] = (Exchange(pk, row.user_input, row.response, row.position), row.created_at)
    return set(texts) & set(ids)
