"""Signals sessions_app sends; apps above it listen (sessions_app imports none of them).

A single episode write sends Django's ``post_save``; a bulk write sends no
``post_save`` (``bulk_create`` never does), so it announces itself here.
"""

from __future__ import annotations

import django.dispatch

# Sent by ``episodes_bulk_create`` inside its transaction, once per batch:
# ``sender=ChatSession, session_pk=<pk>, episodes=<list of the new Episodes>``.
# A receiver that acts on the new rows defers the work to ``on_commit``.
episodes_bulk_created = django.dispatch.Signal()

# Sent by ``sessions_app.history`` inside the transaction that deleted
# exchanges, after the rows are gone and under the session's row lock:
# ``sender=ChatSession, session_pk=<pk>, episodes=<list of (id, position)>``
# for single deletions, or ``episodes=None`` when the whole history was
# cleared. A receiver removes what it derived from them in the same
# transaction, so no trace outlives the commit.
episodes_deleted = django.dispatch.Signal()
