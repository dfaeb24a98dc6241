"""One summarization run of a session: claim the lease, fold the tail, release.

A pass is always: read (short queries, no transaction) -> model call (no
transaction, no row lock held) -> store (one short transaction that re-checks
the lease and the rows read; see ``summaries.store``). Nothing is stored
from a failed call; the failure is recorded on the state row and the error
raised for the task to retry or not.

The model client: a run calls the one passed as ``client=`` (a caller that
runs the runner directly may pass one), otherwise the backend named by
``settings.INFERENCE_BACKEND`` (``summaries.inference.get_client``). Tests put
a fake behind a path they do not call directly (a task, the sweep) by
registering it as a backend (``summaries.inference.register_backend``).

Each model call logs one record on ``nexus.summarization`` with the fields in
``extra``: session, episode_range, prompt_tokens, completion_tokens,
duration_ms, outcome, error (and the prompt/answer text only with
``settings.LOG_CONTENT``).

Each model call, answered or not, is also kept as a ``UtilityCall`` row (the
cost record behind the usage report), written on its own right after the
model returns or raises, outside any transaction; once the answer is stored
the row is linked to its summary, and an answer dropped as stale is marked so.
The row names the user the call is charged to (``summaries.model_cap``): the
person who asked for the work, else the session's owner; a background pass
whose owner is at the model-call cap is not made (``RunOutcome.DEFERRED``).

Modules: ``calls`` (the model call, its cost record and log line),
``session_run`` (the normal run and what a run returns), ``rework`` (a
regenerated row and a rebuilt chain: folded in memory, stored, then a normal
run).
"""

from summaries.runner.rework import rebuild_chain, regenerate_row
from summaries.runner.session_run import RunOutcome, RunResult, run_session

__all__ = ["RunOutcome", "RunResult", "rebuild_chain", "regenerate_row", "run_session"]
