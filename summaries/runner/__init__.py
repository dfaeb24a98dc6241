"""One summarization run of a session: claim the lease, fold the tail, release.

A pass is always: read (short queries, no transaction) -> model call (no
transaction, no row lock held) -> store (one short transaction that re-checks
the lease and the rows read; see ``services.summary_store_pass``). Nothing is
stored from a failed call; the failure is recorded on the state row and the
error raised for the task to retry or not.

Each model call logs one record on ``nexus.summarization`` with the fields in
``extra``: session, episode_range, prompt_tokens, completion_tokens,
duration_ms, outcome, error (and the prompt/answer text only with
``settings.LOG_CONTENT``).

Each model call, answered or not, is also kept as a ``UtilityCall`` row (the
cost record behind the usage report), written on its own right after the
model returns or raises, outside any transaction; once the answer is stored
the row is linked to its summary, and an answer dropped as stale is marked so.

Modules: ``results`` (what a run returns), ``calls`` (the model call, its
cost record and log line), ``folding`` (episodes folded into summaries in
memory), ``session_run`` (the normal run), ``rework`` (claim, rework, then a
normal run), ``regenerate`` and ``rebuild`` (the two reworks).
"""

from summaries.runner.calls import CallSpan, Client
from summaries.runner.folding import count_tokens_of
from summaries.runner.rebuild import rebuild_chain
from summaries.runner.regenerate import regenerate_row
from summaries.runner.results import RunOutcome, RunResult
from summaries.runner.session_run import MAX_PASSES_PER_RUN, run_session

__all__ = [
    "MAX_PASSES_PER_RUN",
    "CallSpan",
    "Client",
    "RunOutcome",
    "RunResult",
    "count_tokens_of",
    "rebuild_chain",
    "regenerate_row",
    "run_session",
]
