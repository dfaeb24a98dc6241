"""Staff admin of summaries; each module registers its own models.

``sessions`` replaces sessions_app's chat session admin with one that shows
the summary chain; ``summaries`` is the row's curation; ``history`` its
revisions and the summarization state; ``users`` adds the erasure action
to the user admin.
"""

from summaries.admin import history, sessions, summaries, users  # noqa: F401  (registers the admins)
