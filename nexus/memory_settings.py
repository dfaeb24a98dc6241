"""The summarization, context and retrieval settings, read from the
environment. ``nexus.settings`` imports them where its ``.env`` file has
been read, so they follow it as every other setting does."""

from __future__ import annotations

from nexus.env import env_choice, env_float, env_identifier, env_int, env_optional_int

SUMMARY_THRESHOLD_TOKENS = env_int("SUMMARY_THRESHOLD_TOKENS", 200, minimum=0)
SUMMARY_MAX_TOKENS = env_int("SUMMARY_MAX_TOKENS", 800, minimum=1)
SUMMARY_MIN_EPISODES = env_int("SUMMARY_MIN_EPISODES", 5, minimum=1)
SUMMARY_TEMPERATURE = env_float("SUMMARY_TEMPERATURE", 0.2, minimum=0.0, maximum=2.0)
SUMMARY_GEN_MAX_TOKENS = env_int("SUMMARY_GEN_MAX_TOKENS", 500, minimum=1)
SUMMARY_MAX_CHARS = env_int("SUMMARY_MAX_CHARS", 3000, minimum=100)
CONTEXT_RECENT_EPISODES = env_int("CONTEXT_RECENT_EPISODES", 8, minimum=0)
# The most of a context's budget the recent window takes (its newest exchange always).
CONTEXT_RECENT_SHARE = env_float("CONTEXT_RECENT_SHARE", 0.3, minimum=0.0, maximum=1.0)
# A retrieved exchange longer than this many tokens is quoted by its passages that matter for the
# question, at most this many tokens of them (summaries.context.selection); a shorter one in full.
CONTEXT_PASSAGE_TOKENS = env_int("CONTEXT_PASSAGE_TOKENS", 300, minimum=20)
# An earlier exchange or passage is quoted only when its evidence (sessions_app.relevance) reaches this.
CONTEXT_RELEVANCE_FLOOR = env_float("CONTEXT_RELEVANCE_FLOOR", 0.15, minimum=0.0, maximum=10.0)
# Summary rows read into one context at most (newest first); older ones are reported as left out.
CONTEXT_MAX_SUMMARIES = env_int("CONTEXT_MAX_SUMMARIES", 20, minimum=1)
# Full-text search of episodes (sessions_app.search). SEARCH_CONFIG is the
# PostgreSQL text search configuration the index is built with (the
# migration that creates the index reads it). CONTEXT_RETRIEVE_CANDIDATES
# bounds the episodes ranked for one question, so a question costs the same in a session of any
# length; CONTEXT_SEMANTIC_CANDIDATES, the newest compared by meaning (sessions_app.semantic; 0: off).
SEARCH_CONFIG = env_identifier("SEARCH_CONFIG", "english")
CONTEXT_RETRIEVE_CANDIDATES = env_int("CONTEXT_RETRIEVE_CANDIDATES", 200, minimum=10, maximum=5000)
CONTEXT_SEMANTIC_CANDIDATES = env_int("CONTEXT_SEMANTIC_CANDIDATES", 5000, minimum=0, maximum=50_000)
# Tokens of an episode given passage vectors, the user's first (bench/passage_vectors.py).
SEMANTIC_PASSAGE_TOKENS_PER_EPISODE = env_int("SEMANTIC_PASSAGE_TOKENS_PER_EPISODE", 2000, minimum=0)
# The budget of a context whose caller names none (the context endpoint, chat turns).
CONTEXT_DEFAULT_BUDGET = env_int("CONTEXT_DEFAULT_BUDGET", 2000, minimum=1, maximum=1_000_000)
# How the background runs behave. A run's per-session lease must outlive one
# model call, or another worker could take over while the first still waits.
SUMMARY_LEASE_SECONDS = env_int("SUMMARY_LEASE_SECONDS", 180, minimum=5)
SUMMARY_MAX_RETRIES = env_int("SUMMARY_MAX_RETRIES", 5, minimum=0)
# Kept below the Redis visibility timeout: a countdown longer than that would
# be delivered a second time while it waits.
SUMMARY_RETRY_BACKOFF_MAX = env_int("SUMMARY_RETRY_BACKOFF_MAX", 120, minimum=1)
# A failed session is tried again by the sweep (or a new write) after this long.
SUMMARY_RETRY_AFTER_SECONDS = env_int("SUMMARY_RETRY_AFTER_SECONDS", 300, minimum=0)
# A session queued longer than this lost its message (broker restart): re-enqueue
# (its summaries, or the encoding of its vectors: sessions_app.semantic.backlog).
SUMMARY_QUEUED_STALE_SECONDS = env_int("SUMMARY_QUEUED_STALE_SECONDS", 600, minimum=1)
SUMMARY_SWEEP_SECONDS = env_int("SUMMARY_SWEEP_SECONDS", 60, minimum=1)
# Model calls (utility and chat, not the offline backend's) per user per
# rolling hour; unset or empty: no cap (summaries.model_cap).
UTILITY_CALLS_PER_USER_HOUR = env_optional_int("UTILITY_CALLS_PER_USER_HOUR", minimum=1)
# The most of a context's budget the notes about the person take, right after the question
# (notes.context): instructions first, then preferences, then facts ranked by the question.
CONTEXT_NOTES_SHARE = env_float("CONTEXT_NOTES_SHARE", 0.15, minimum=0.0, maximum=1.0)
# The memory scope of a session made on the chat pages (the API's default is "session": an
# application serving many people opts in). "shared": it reads from and lends to the person's
# other shared chats (sessions_app.shared_memory); "session": its own episodes only.
SESSION_MEMORY_DEFAULT = env_choice("SESSION_MEMORY_DEFAULT", "shared", ("shared", "session"))
