"""How far a session's summaries reach, kept on its state row.

``covered_through`` is the highest ``last_episode_id`` of the chain and
``covered_episodes`` the number of the session's episodes at or below it.
The gate and summary-status subtract ``covered_episodes`` from the
session's episode counter instead of counting the un-summarized tail.

Lock contract: ``refresh_coverage`` runs inside the transaction that
changed the chain, after the change; it locks the state row (which the
store functions already hold, lease first) and counts only the episodes
between the old reach and the new one, so a pass pays for its own chunk.
"""

from __future__ import annotations

from django.db import transaction

from sessions_app.models import Episode
from summaries.models import SummarizationState, Summary
from summaries.run_state import ensure_state


def chain_reach(session_pk: int) -> int:
    """The highest ``last_episode_id`` of the session's rows (0 when none):
    one backward probe of the ``(session, last_episode_id)`` index."""
    value = (
        Summary.objects.filter(session_id=session_pk)
        .order_by("-last_episode_id")
        .values_list("last_episode_id", flat=True)
        .first()
    )
    return value or 0


def refresh_coverage(session_pk: int) -> None:
    """Bring the state row's coverage in line with the chain (see the module docstring)."""
    with transaction.atomic():  # a savepoint inside the caller's transaction
        through = chain_reach(session_pk)
        # No state row for a session that is gone (erased while a run was in flight).
        ensure_state(session_pk)
        state = (
            SummarizationState.objects.select_for_update()
            .only("covered_through", "covered_episodes")
            .filter(session_id=session_pk)
            .first()
        )
        if state is None or through == state.covered_through:
            return
        low, high = sorted((state.covered_through, through))
        between = Episode.objects.after(session_pk, low, high).count()
        grown = through > state.covered_through
        covered = state.covered_episodes + between if grown else state.covered_episodes - between
        SummarizationState.objects.filter(session_id=session_pk).update(
            covered_through=through, covered_episodes=max(0, covered)
        )
