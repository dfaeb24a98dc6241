"""How far each session's vectors reach (the position of the newest episode
with vectors) and when its encoding last moved, so the sweep can find the
sessions whose encoding task was lost by an index, not a scan.

Numbered 0008: another change adds sessions_app 0007; this one follows it
once both are in (the dependency below names the one present when written).
"""

from django.db import migrations, models
from django.db.models import F


def measure_existing_vectors(apps, schema_editor):
    """Each session's reach from the vectors it has: the position of the
    episode holding its newest vector (0 for none), one statement for all."""
    quote = schema_editor.quote_name
    session = quote(apps.get_model("sessions_app", "ChatSession")._meta.db_table)
    episode = quote(apps.get_model("sessions_app", "Episode")._meta.db_table)
    vector = quote(apps.get_model("sessions_app", "EpisodeVector")._meta.db_table)
    schema_editor.execute(
        f"""UPDATE {session} SET encoded_through_position = COALESCE(
                (SELECT e.position FROM {episode} e
                  WHERE e.id = (SELECT MAX(v.episode_id) FROM {vector} v WHERE v.session_id = {session}.id)),
                0)"""
    )


class Migration(migrations.Migration):

    dependencies = [
        ("sessions_app", "0006_episode_position"),
    ]

    operations = [
        migrations.AddField(
            model_name="chatsession",
            name="encoded_through_position",
            field=models.PositiveIntegerField(default=0, editable=False),
        ),
        migrations.AddField(
            model_name="chatsession",
            name="encoding_activity_at",
            field=models.DateTimeField(editable=False, null=True),
        ),
        migrations.RunPython(measure_existing_vectors, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name="chatsession",
            index=models.Index(
                F("cached_last_position") - F("encoded_through_position"), name="session_unencoded_idx"
            ),
        ),
    ]
