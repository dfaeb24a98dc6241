"""Passage vectors cover the whole of an episode's text, each stored with
its passage's span. Rows written before hold passages of the first 2,000
characters of each side only, and no spans: every session's encoding
progress goes back to the start, so the sweep (sessions_app.semantic.backlog)
encodes its history again, a few sessions at a time; until then the old
rows are read as they are."""

from django.db import migrations, models


def encode_again_by_the_sweep(apps, schema_editor):
    apps.get_model("sessions_app", "ChatSession").objects.update(encoded_through_position=0)


class Migration(migrations.Migration):

    dependencies = [
        ("sessions_app", "0010_episode_fts_owner"),
    ]

    operations = [
        migrations.AddField(
            model_name="episodevector",
            name="spans",
            field=models.BinaryField(db_default=b"", default=b"", editable=False),
        ),
        migrations.RunPython(encode_again_by_the_sweep, migrations.RunPython.noop),
    ]
