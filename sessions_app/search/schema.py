"""The full-text index's schema: what migrations create and drop.

PostgreSQL: a stored generated ``tsvector`` column, so every write path
(ORM, bulk insert, raw SQL) fills it inside its own transaction, and a GIN
index on ``(session_id, search_vector)`` (``btree_gin``), so one lookup
narrows by session and term together. The text search configuration is
``SEARCH_CONFIG`` as it is when the index is created.

SQLite: an FTS5 table over the episode table (external content: the text is
stored once), kept by triggers in the writing transaction; ``porter
unicode61`` plays the part of the PostgreSQL configuration. SQLite cannot
alter most columns in place: Django rebuilds the table, and its triggers go
with the old one, so a migration that alters the episode table on SQLite
must end with ``restore_sqlite_triggers`` (0004 does).

From migration 0008 the PostgreSQL index is a GIN index on ``(owner_id,
session_id, search_vector)``: a condition on any of a GIN index's columns
uses it alike, so the one index serves one session's search, one owner's
across all their sessions, and the vector alone (staff who see everything).
It replaces the index on ``(session_id, search_vector)``; both are built
``CONCURRENTLY`` (``swap_search_index``), outside a transaction.

From migration 0009 the SQLite index holds the owner too: a third column,
``owner_id``, read from the episode row like the text (so the table stays
external content, with no view in between). A search across an owner's
sessions names the owner inside its ``MATCH`` (``owner_id : "42" AND
{user_input response} : "walrus"``), so FTS5 intersects the two itself
and hands back the owner's matches only: how many of other users'
episodes hold the word changes nothing the query does.

Neither is a model field: the index is the database's business, read only
by ``sessions_app.search``.
"""

from __future__ import annotations

from django.conf import settings
from django.db.backends.base.schema import BaseDatabaseSchemaEditor

TABLE = "sessions_app_episode"
FTS = "sessions_app_episode_fts"

POSTGRES_FORWARD = [
    "CREATE EXTENSION IF NOT EXISTS btree_gin",
    f"""ALTER TABLE {TABLE} ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (
        to_tsvector('{{config}}'::regconfig, user_input || ' ' || response)) STORED""",
    # A small pending list: every search scans it whole, and writes flush it often enough.
    f"CREATE INDEX episode_search_idx ON {TABLE} USING gin (session_id, search_vector)"
    " WITH (gin_pending_list_limit = 256)",
]
POSTGRES_BACKWARD = [
    "DROP INDEX IF EXISTS episode_search_idx",
    f"ALTER TABLE {TABLE} DROP COLUMN IF EXISTS search_vector",
]

SQLITE_TRIGGERS = [
    f"""CREATE TRIGGER {FTS}_insert AFTER INSERT ON {TABLE} BEGIN
        INSERT INTO {FTS}(rowid, user_input, response) VALUES (new.id, new.user_input, new.response);
    END""",
    f"""CREATE TRIGGER {FTS}_delete AFTER DELETE ON {TABLE} BEGIN
        INSERT INTO {FTS}({FTS}, rowid, user_input, response)
        VALUES ('delete', old.id, old.user_input, old.response);
    END""",
    f"""CREATE TRIGGER {FTS}_update AFTER UPDATE OF user_input, response ON {TABLE} BEGIN
        INSERT INTO {FTS}({FTS}, rowid, user_input, response)
        VALUES ('delete', old.id, old.user_input, old.response);
        INSERT INTO {FTS}(rowid, user_input, response) VALUES (new.id, new.user_input, new.response);
    END""",
]
#: From 0009: the owner is indexed too (module docstring).
SQLITE_OWNER_TRIGGERS = [
    f"""CREATE TRIGGER {FTS}_insert AFTER INSERT ON {TABLE} BEGIN
        INSERT INTO {FTS}(rowid, user_input, response, owner_id)
        VALUES (new.id, new.user_input, new.response, new.owner_id);
    END""",
    f"""CREATE TRIGGER {FTS}_delete AFTER DELETE ON {TABLE} BEGIN
        INSERT INTO {FTS}({FTS}, rowid, user_input, response, owner_id)
        VALUES ('delete', old.id, old.user_input, old.response, old.owner_id);
    END""",
    f"""CREATE TRIGGER {FTS}_update AFTER UPDATE OF user_input, response, owner_id ON {TABLE} BEGIN
        INSERT INTO {FTS}({FTS}, rowid, user_input, response, owner_id)
        VALUES ('delete', old.id, old.user_input, old.response, old.owner_id);
        INSERT INTO {FTS}(rowid, user_input, response, owner_id)
        VALUES (new.id, new.user_input, new.response, new.owner_id);
    END""",
]
SQLITE_REBUILD = f"INSERT INTO {FTS}({FTS}) VALUES ('rebuild')"
SQLITE_FORWARD = [
    f"""CREATE VIRTUAL TABLE {FTS} USING fts5(
        user_input, response, content='{TABLE}', content_rowid='id', tokenize='porter unicode61')""",
    *SQLITE_TRIGGERS,
    SQLITE_REBUILD,
]
SQLITE_BACKWARD = [  # the triggers first: restore_sqlite_triggers takes those three
    f"DROP TRIGGER IF EXISTS {FTS}_insert",
    f"DROP TRIGGER IF EXISTS {FTS}_delete",
    f"DROP TRIGGER IF EXISTS {FTS}_update",
    f"DROP TABLE IF EXISTS {FTS}",
]
SQLITE_OWNER_FORWARD = [
    *SQLITE_BACKWARD,
    f"""CREATE VIRTUAL TABLE {FTS} USING fts5(
        user_input, response, owner_id,
        content='{TABLE}', content_rowid='id', tokenize='porter unicode61')""",
    *SQLITE_OWNER_TRIGGERS,
    SQLITE_REBUILD,
]
SQLITE_OWNER_BACKWARD = [*SQLITE_BACKWARD, *SQLITE_FORWARD]


SEARCH_INDEX = "episode_search_idx"  # 0003: (session_id, search_vector)
OWNER_SEARCH_INDEX = "episode_owner_search_idx"  # 0008: (owner_id, session_id, search_vector)
POSTGRES_INDEXES = {
    # A small pending list: every search scans it whole, and writes flush it often enough.
    SEARCH_INDEX: f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {SEARCH_INDEX} ON {TABLE}"
    " USING gin (session_id, search_vector) WITH (gin_pending_list_limit = 256)",
    OWNER_SEARCH_INDEX: f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {OWNER_SEARCH_INDEX} ON {TABLE}"
    " USING gin (owner_id, session_id, search_vector) WITH (gin_pending_list_limit = 256)",
}


def create_index_concurrently(schema_editor: BaseDatabaseSchemaEditor, name: str, sql: str) -> None:
    """Build an index without blocking writes (outside a transaction). A build
    that failed half-way leaves an invalid index of that name: it is dropped
    and built again, so running the migration again finishes the work."""
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT NOT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)", [name])
        row = cursor.fetchone()
    if row and row[0]:
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
    schema_editor.execute(sql)


def _swap(schema_editor: BaseDatabaseSchemaEditor, new: str, old: str) -> None:
    if schema_editor.connection.vendor == "postgresql":
        create_index_concurrently(schema_editor, new, POSTGRES_INDEXES[new])
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {old}")


def swap_search_index(apps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """PostgreSQL: the owner's search index in place of the session's (0008)."""
    _swap(schema_editor, OWNER_SEARCH_INDEX, SEARCH_INDEX)


def unswap_search_index(apps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    _swap(schema_editor, SEARCH_INDEX, OWNER_SEARCH_INDEX)


def _execute(schema_editor: BaseDatabaseSchemaEditor, statements: list[str]) -> None:
    for statement in statements:
        schema_editor.execute(statement.replace("{config}", settings.SEARCH_CONFIG))


def create_index(apps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    vendor = schema_editor.connection.vendor
    _execute(schema_editor, {"postgresql": POSTGRES_FORWARD, "sqlite": SQLITE_FORWARD}.get(vendor, []))


def drop_index(apps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    vendor = schema_editor.connection.vendor
    _execute(schema_editor, {"postgresql": POSTGRES_BACKWARD, "sqlite": SQLITE_BACKWARD}.get(vendor, []))


def restore_sqlite_triggers(apps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """After SQLite rebuilt the episode table: its triggers again, and the
    index rebuilt from the table (rows written meanwhile were not indexed).
    The triggers are those of the index as it is at this point of the
    migrations: with the owner column from 0009, without it before."""
    if schema_editor.connection.vendor != "sqlite":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f"PRAGMA table_info({FTS})")
        columns = {row[1] for row in cursor.fetchall()}
    triggers = SQLITE_OWNER_TRIGGERS if "owner_id" in columns else SQLITE_TRIGGERS
    _execute(schema_editor, [*SQLITE_BACKWARD[:3], *triggers, SQLITE_REBUILD])


def index_owner(apps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """SQLite: the index with the owner column (0009); nothing to do on PostgreSQL."""
    if schema_editor.connection.vendor == "sqlite":
        _execute(schema_editor, SQLITE_OWNER_FORWARD)


def unindex_owner(apps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor == "sqlite":
        _execute(schema_editor, SQLITE_OWNER_BACKWARD)
