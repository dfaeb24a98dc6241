"""Each episode carries its session's owner (``Episode.owner``), and the
full-text index holds it (``sessions_app.search.schema``): a search across
an owner's sessions is then one lookup of the index, however many sessions
there are.

On PostgreSQL no step holds a lock that blocks writes for longer than a
catalog change, so the migration is not atomic: the column is added without
a default (no table rewrite); it is filled in batches of ``BATCH`` episodes,
each committed on its own; it becomes NOT NULL through a CHECK constraint
validated first (validation reads the table without blocking writes, and
SET NOT NULL then trusts it instead of scanning under its lock); the
indexes are built ``CONCURRENTLY``. Processes of the previous version may
go on writing while it runs: until the column is NOT NULL a trigger gives
their rows the owner. Restart them when it is done: from then on a write
that names no owner is refused. Every step can run again, so a migration
stopped half-way is finished by running it again.

On SQLite (the embedded default, one process) the column is made NOT NULL
by Django's table rebuild, which drops the full-text triggers: the last
step puts them back.
"""

from django.conf import settings
from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor

from sessions_app.search.schema import (
    create_index_concurrently,
    restore_sqlite_triggers,
    swap_search_index,
    unswap_search_index,
)

#: Episodes per UPDATE of the fill: one short transaction each.
BATCH = 5000
TABLE = "sessions_app_episode"
SESSIONS = "sessions_app_chatsession"
OWNER_INDEX = "episode_owner_id_idx"
NOT_NULL_CHECK = "episode_owner_not_null"
FILL_TRIGGER = "episode_owner_fill"
POSTGRES_FILL_TRIGGER = [
    f"""CREATE OR REPLACE FUNCTION {FILL_TRIGGER}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            NEW.owner_id := (SELECT owner_id FROM {SESSIONS} WHERE id = NEW.session_id);
            RETURN NEW;
        END $$""",
    f"DROP TRIGGER IF EXISTS {FILL_TRIGGER} ON {TABLE}",
    f"""CREATE TRIGGER {FILL_TRIGGER} BEFORE INSERT ON {TABLE}
        FOR EACH ROW WHEN (NEW.owner_id IS NULL) EXECUTE FUNCTION {FILL_TRIGGER}()""",
]
POSTGRES_DROP_FILL_TRIGGER = [
    f"DROP TRIGGER IF EXISTS {FILL_TRIGGER} ON {TABLE}",
    f"DROP FUNCTION IF EXISTS {FILL_TRIGGER}()",
]


def _column_exists(schema_editor: BaseDatabaseSchemaEditor, column: str) -> bool:
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        described = connection.introspection.get_table_description(cursor, TABLE)
    return any(info.name == column for info in described)


def _execute(schema_editor: BaseDatabaseSchemaEditor, statements: list[str]) -> None:
    if schema_editor.connection.vendor == "postgresql":
        for statement in statements:
            schema_editor.execute(statement)


class AddOwnerColumn(migrations.AddField):
    """``AddField`` that does nothing when the column is there (a second run);
    on PostgreSQL with the trigger that fills it for older writers."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if not _column_exists(schema_editor, "owner_id"):
            super().database_forwards(app_label, schema_editor, from_state, to_state)
        _execute(schema_editor, POSTGRES_FILL_TRIGGER)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        _execute(schema_editor, POSTGRES_DROP_FILL_TRIGGER)
        super().database_backwards(app_label, schema_editor, from_state, to_state)


def fill_owners(apps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """Each episode's owner from its session, ``BATCH`` ids at a time, each
    UPDATE its own transaction (rows written meanwhile have theirs from the
    write path or the trigger); then once more for a row whose transaction
    began before the trigger and committed after its range was filled."""
    fill = (
        f"UPDATE {TABLE} SET owner_id = (SELECT s.owner_id FROM {SESSIONS} s WHERE s.id = {TABLE}.session_id)"
        " WHERE owner_id IS NULL"
    )
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f"SELECT max(id) FROM {TABLE}")
        (highest,) = cursor.fetchone()
        for low in range(0, highest or 0, BATCH):
            cursor.execute(f"{fill} AND id > %s AND id <= %s", [low, low + BATCH])
        cursor.execute(fill)


class RequireOwner(migrations.AlterField):
    """``AlterField`` to NOT NULL. On PostgreSQL through a CHECK constraint
    validated first, so SET NOT NULL scans nothing while it holds its lock;
    elsewhere Django's own (SQLite rebuilds the table)."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor != "postgresql":
            super().database_forwards(app_label, schema_editor, from_state, to_state)
            return
        with schema_editor.connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_constraint WHERE conname = %s", [NOT_NULL_CHECK])
            exists = cursor.fetchone() is not None
        if not exists:
            schema_editor.execute(
                f"ALTER TABLE {TABLE} ADD CONSTRAINT {NOT_NULL_CHECK} CHECK (owner_id IS NOT NULL) NOT VALID"
            )
        schema_editor.execute(f"ALTER TABLE {TABLE} VALIDATE CONSTRAINT {NOT_NULL_CHECK}")
        schema_editor.execute(f"ALTER TABLE {TABLE} ALTER COLUMN owner_id SET NOT NULL")
        schema_editor.execute(f"ALTER TABLE {TABLE} DROP CONSTRAINT IF EXISTS {NOT_NULL_CHECK}")
        _execute(schema_editor, POSTGRES_DROP_FILL_TRIGGER)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        super().database_backwards(app_label, schema_editor, from_state, to_state)
        _execute(schema_editor, POSTGRES_FILL_TRIGGER)


class AddOwnerIndex(migrations.AddIndex):
    """``AddIndex``, built ``CONCURRENTLY`` on PostgreSQL; a second run finds it there."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor != "postgresql":
            schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {OWNER_INDEX} ON {TABLE} (owner_id, id)")
            return
        sql = f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {OWNER_INDEX} ON {TABLE} (owner_id, id)"
        create_index_concurrently(schema_editor, OWNER_INDEX, sql)


def analyze(apps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """The planner's statistics of the new column now, not at autovacuum's next pass."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"ANALYZE {TABLE}")


def owner_field(*, null: bool) -> models.ForeignKey:
    """``Episode.owner``: nullable while it is filled, then required."""
    return models.ForeignKey(
        db_constraint=False,
        db_index=False,
        editable=False,
        null=null,
        on_delete=models.DO_NOTHING,
        related_name="+",
        to=settings.AUTH_USER_MODEL,
    )


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("sessions_app", "0007_encoding_progress"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        # Run last when the migration is reversed: dropping the column may rebuild the table again.
        migrations.RunPython(migrations.RunPython.noop, restore_sqlite_triggers),
        migrations.AlterField(
            model_name="chatsession",
            name="owner",
            field=models.ForeignKey(
                editable=False,
                on_delete=models.CASCADE,
                related_name="chat_sessions",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        AddOwnerColumn(model_name="episode", name="owner", field=owner_field(null=True)),
        migrations.RunPython(fill_owners, migrations.RunPython.noop),
        AddOwnerIndex(
            model_name="episode",
            index=models.Index(fields=["owner", "id"], name=OWNER_INDEX),
        ),
        migrations.RunPython(swap_search_index, unswap_search_index),
        RequireOwner(model_name="episode", name="owner", field=owner_field(null=False)),
        migrations.RunPython(analyze, migrations.RunPython.noop),
        # Making the column NOT NULL rebuilt the table on SQLite, and its triggers with it.
        migrations.RunPython(restore_sqlite_triggers, restore_sqlite_triggers),
    ]
