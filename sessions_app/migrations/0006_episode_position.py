"""Each episode's position in its session (1, 2, 3, ... by id) and the
session's counter of positions handed out."""

from django.db import migrations, models
from django.db.models import Max, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce

from sessions_app.search.schema import restore_sqlite_triggers


def number_episodes(apps, schema_editor):
    """Positions by id within each session; each session's counter at its last."""
    Episode = apps.get_model("sessions_app", "Episode")
    ChatSession = apps.get_model("sessions_app", "ChatSession")
    table = schema_editor.quote_name(Episode._meta.db_table)
    # One statement for the whole table (PostgreSQL, and SQLite from 3.33, take UPDATE ... FROM).
    schema_editor.execute(
        f"""UPDATE {table} SET position = numbered.n
              FROM (SELECT id, row_number() OVER (PARTITION BY session_id ORDER BY id) AS n
                      FROM {table}) AS numbered
             WHERE {table}.id = numbered.id"""
    )
    last = Episode.objects.filter(session=OuterRef("pk")).order_by().values("session")
    highest = Subquery(last.annotate(m=Max("position")).values("m"))
    ChatSession.objects.update(cached_last_position=Coalesce(highest, Value(0)))


class Migration(migrations.Migration):

    dependencies = [
        ("sessions_app", "0005_episode_vector"),
    ]

    operations = [
        # Run last when the migration is reversed: dropping the column rebuilds the table again.
        migrations.RunPython(migrations.RunPython.noop, restore_sqlite_triggers),
        migrations.AddField(
            model_name="chatsession",
            name="cached_last_position",
            field=models.PositiveIntegerField(default=0, editable=False),
        ),
        migrations.AddField(
            model_name="episode",
            name="position",
            field=models.PositiveIntegerField(editable=False, null=True),
        ),
        migrations.RunPython(number_episodes, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="episode",
            name="position",
            field=models.PositiveIntegerField(editable=False),
        ),
        migrations.AddConstraint(
            model_name="episode",
            constraint=models.UniqueConstraint(
                fields=("session", "position"), name="episode_session_position_uniq"
            ),
        ),
        # Making the column NOT NULL rebuilt the table on SQLite, and its triggers with it.
        migrations.RunPython(restore_sqlite_triggers, restore_sqlite_triggers),
    ]
