"""Finding notes about the person in a session's new episodes, in the
background (never on the write path).

With a model backend the utility model lists what the user stated
(``notes.extraction_prompt``), charged to the session's owner like a
background summary (``UtilityCall`` kind ``notes``), so it counts against
``UTILITY_CALLS_PER_USER_HOUR``; at the cap nothing is called and the
episodes wait for the next write. With the ``offline`` backend rules read
the user's own sentences (``notes.rules``). Either way only the user's
words count: a note the model offers whose words the user never said is
dropped. The cursor (``NoteCursor``) moves past what was read once its notes
are stored, so a repeated task finds nothing twice.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from django.conf import settings
from django.db import IntegrityError, transaction

from notes.context import terms
from notes.extraction_prompt import notes_prompt, parse_reply
from notes.models import Note, NoteCursor
from notes.rules import may_state_note, statements
from notes.services import Found, notes_apply
from sessions_app.models import ChatSession, Episode
from summaries.inference import InferenceError, get_client
from summaries.model_cap import counts_against_cap, model_call_wait
from summaries.models import UtilityCall
from summaries.runner.calls import CallSpan, call_model

logger = logging.getLogger("nexus.notes")

# Messages that may state a note read per pass (one model call), among at most READ_EPISODES
# exchanges; a longer backlog takes several passes.
BATCH_EPISODES = 10
READ_EPISODES = 100
# The share of a model note's words the user must have said, so the model cannot add its own.
GROUNDING = 0.5


@dataclass
class Extracted:
    notes: list[Note] = field(default_factory=list)
    deferred: bool = False
    more: bool = False  # episodes past what this pass read are left


def extract_notes(*, session_pk: int, max_passes: int = 20) -> Extracted:
    """Read the session's episodes past its cursor for notes and store them."""
    total = Extracted()
    for _ in range(max_passes):
        done = _one_pass(session_pk)
        total.notes += done.notes
        total.deferred = done.deferred
        if not done.more:
            break
    return total


def _one_pass(session_pk: int) -> Extracted:
    session = ChatSession.objects.filter(pk=session_pk).first()
    if session is None:
        return Extracted()
    cursor = (
        NoteCursor.objects.filter(session_id=session_pk).values_list("through_episode_id", flat=True).first()
    )
    through = cursor or 0
    rows = list(
        Episode.objects.after(session_pk, through)
        .order_by("pk")
        .values_list("pk", "user_input", "response")[:READ_EPISODES]
    )
    if not rows:
        return Extracted()
    # Only the user's messages that may state a note are read for one (the same test the write made).
    episodes = [row for row in rows if may_state_note(row[1])][:BATCH_EPISODES]
    covered = episodes[-1][0] if len(episodes) == BATCH_EPISODES else rows[-1][0]
    more = len(episodes) == BATCH_EPISODES or len(rows) == READ_EPISODES
    if not episodes:
        found: list[Found] = []
    elif counts_against_cap(client := get_client()):
        if model_call_wait(session.owner_id) is not None:
            return Extracted(deferred=True)
        try:
            found = _by_model(client, session, episodes)
        except InferenceError:
            logger.warning("note extraction failed", extra={"session": str(session.uuid)}, exc_info=True)
            return Extracted(deferred=True)
    else:
        found = [
            Found(kind=s.kind, text=s.text, episode_id=pk, slot=s.slot)
            for pk, user_input, _ in episodes
            for s in statements(user_input)
        ]
    try:
        with transaction.atomic():
            # Stored once: a cursor moved by another pass meanwhile means its notes are in.
            if cursor is None:
                NoteCursor.objects.create(session_id=session_pk, through_episode_id=covered)
                moved = 1
            else:
                moved = NoteCursor.objects.filter(session_id=session_pk, through_episode_id=through).update(
                    through_episode_id=covered
                )
            made = notes_apply(session=session, found=found) if moved else []
    except IntegrityError:  # another pass made the cursor first (or the session or an episode is gone)
        return Extracted()
    return Extracted(notes=made, more=bool(moved) and more)


def _by_model(client, session: ChatSession, episodes: list[tuple[int, str, str]]) -> list[Found]:
    known = list(Note.objects.visible_in(session).only("pk", "kind", "text")[:100])
    chars = settings.SUMMARY_MAX_CHARS
    prompt = notes_prompt(known, [(user[:chars], reply[:chars]) for _, user, reply in episodes])
    span = CallSpan(
        session_pk=session.pk,
        session_uuid=str(session.uuid),
        first_episode_id=episodes[0][0],
        last_episode_id=episodes[-1][0],
        kind=UtilityCall.Kind.NOTES,
        log_kind="notes",
        charged_to=session.owner_id,
    )
    answer = call_model(client, prompt, span)
    items = parse_reply(answer.completion.text, known_ids={note.pk for note in known})
    said = [(pk, terms(user)) for pk, user, _ in episodes]
    found = []
    for item in items:
        words = terms(item["text"])
        source = max(said, key=lambda pair: len(words & pair[1]))
        if not words or len(words & source[1]) < GROUNDING * len(words):
            continue  # not the user's words
        found.append(
            Found(kind=item["kind"], text=item["text"], episode_id=source[0], replaces=item["replaces"])
        )
    return found
