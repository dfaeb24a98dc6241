"""The full-text index of episodes (user input and response together).

PostgreSQL: a stored generated ``tsvector`` column, so every write path
(ORM, bulk insert, raw SQL) fills it inside its own transaction, and a GIN
index on ``(session_id, search_vector)`` (``btree_gin``), so one lookup
narrows by session and term together. The text search configuration is
``SEARCH_CONFIG`` as it is when this migration runs.

SQLite: an FTS5 table over the episode table (external content: the text is
stored once), kept by triggers in the writing transaction; ``porter
unicode61`` plays the part of the PostgreSQL configuration.

Neither is a model field: the index is the database's business, read only
by ``sessions_app.search``.
"""

from django.conf import settings
from django.db import migrations

TABLE = "sessions_app_episode"
FTS = "sessions_app_episode_fts"

POSTGRES_FORWARD = [
    "CREATE EXTENSION IF NOT EXISTS btree_gin",
    f"""ALTER TABLE {TABLE} ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (
        to_tsvector('{{config}}'::regconfig, user_input || ' ' || response)) STORED""",
    f"CREATE INDEX episode_search_idx ON {TABLE} USING gin (session_id, search_vector)",
]
POSTGRES_BACKWARD = [
    "DROP INDEX IF EXISTS episode_search_idx",
    f"ALTER TABLE {TABLE} DROP COLUMN IF EXISTS search_vector",
]

SQLITE_FORWARD = [
    f"""CREATE VIRTUAL TABLE {FTS} USING fts5(
        user_input, response, content='{TABLE}', content_rowid='id', tokenize='porter unicode61')""",
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
    f"INSERT INTO {FTS}({FTS}) VALUES ('rebuild')",
]
SQLITE_BACKWARD = [
    f"DROP TRIGGER IF EXISTS {FTS}_insert",
    f"DROP TRIGGER IF EXISTS {FTS}_delete",
    f"DROP TRIGGER IF EXISTS {FTS}_update",
    f"DROP TABLE IF EXISTS {FTS}",
]


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        statements = statements_by_vendor.get(schema_editor.connection.vendor, [])
        for statement in statements:
            schema_editor.execute(statement.replace("{config}", settings.SEARCH_CONFIG))

    return run


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0002_episode_session_index_only")]

    operations = [
        migrations.RunPython(
            _run({"postgresql": POSTGRES_FORWARD, "sqlite": SQLITE_FORWARD}),
            _run({"postgresql": POSTGRES_BACKWARD, "sqlite": SQLITE_BACKWARD}),
            elidable=False,
        )
    ]
