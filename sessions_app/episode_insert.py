"""The one statement that stores an API client's episode on PostgreSQL
(``sessions_app.services.episode_create_for_user``)."""

from __future__ import annotations

import functools

from sessions_app.history_fingerprint import extended_sql
from sessions_app.models import ChatSession, Episode

# The attribute names ``Episode.from_db`` takes the written row's values in (the model's field order).
EPISODE_FIELDS = (
    "id", "session_id", "user_input", "response", "token_count", "created_at", "metadata", "position",
    "owner_id",
)  # fmt: skip


@functools.cache
def fused_episode_insert_sql(*, owner_check: bool, dated: bool) -> str:
    """The statement of ``episode_create_for_user``, built once per variant
    (with or without the owner check; with or without a date the caller
    gave, which must not precede the session's newest episode). Parameters:
    tokens, now, created_at, exchange digest, uuid, [owner id], [created_at],
    user_input, response, tokens, metadata.

    The new episode's id is drawn from the table's sequence inside the
    UPDATE, which holds the session's row lock: ids follow commit order as
    in ``episode_create``, and the id lands on the session row in the same
    statement (an UPDATE after the INSERT would touch the row twice); so
    does its position, from the session's position counter. The episode
    takes its owner from the row the UPDATE returns. The session's history
    fingerprint is extended there too (``NULL``, none kept, stays ``NULL``).
    """
    session_meta, episode_meta = ChatSession._meta, Episode._meta
    names = (
        "id", "session", "owner", "position", "user_input", "response", "token_count", "created_at",
        "metadata",
    )  # fmt: skip
    column = {name: episode_meta.get_field(name).column for name in names}
    owner = session_meta.get_field("owner").column
    owner_filter = f' AND "{owner}" = %s' if owner_check else ""
    date_filter = ' AND ("cached_last_episode_at" IS NULL OR "cached_last_episode_at" <= %s)' if dated else ""
    fingerprint = session_meta.get_field("history_fingerprint").column
    sequence = f"pg_get_serial_sequence('\"{episode_meta.db_table}\"', '{column['id']}')"
    return f"""
        WITH locked AS (
            UPDATE "{session_meta.db_table}"
               SET "cached_episode_count" = "cached_episode_count" + 1,
                   "cached_total_tokens" = "cached_total_tokens" + %s,
                   "updated_at" = %s,
                   "cached_last_position" = "cached_last_position" + 1,
                   "cached_last_episode_id" = nextval({sequence}),
                   "cached_last_episode_at" = GREATEST("cached_last_episode_at", %s),
                   "{fingerprint}" = {extended_sql(fingerprint)}
             WHERE "uuid" = %s{owner_filter}{date_filter}
         RETURNING "id", "{owner}", "cached_last_episode_id", "cached_last_position"
        )
        INSERT INTO "{episode_meta.db_table}"
               ("{column['id']}", "{column['session']}", "{column['owner']}", "{column['position']}",
                "{column['user_input']}", "{column['response']}", "{column['token_count']}",
                "{column['created_at']}", "{column['metadata']}")
        SELECT locked."cached_last_episode_id", locked."id", locked."{owner}", locked."cached_last_position",
               %s, %s, %s, %s, %s
          FROM locked
        RETURNING "id", "{column['session']}", "{column['position']}", "{column['owner']}"
    """
