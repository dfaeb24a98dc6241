"""Episode vectors from float16 to each vector's scale and int8 values
(``sessions_app.semantic.vectors``): half the bytes, read back faster."""

from django.db import migrations

from sessions_app.semantic.vector_layouts import float16_to_int8, int8_to_float16, rewrite


def to_int8(apps, schema_editor):
    rewrite(apps.get_model("sessions_app", "EpisodeVector"), "vector", float16_to_int8)


def to_float16(apps, schema_editor):
    rewrite(apps.get_model("sessions_app", "EpisodeVector"), "vector", int8_to_float16)


class Migration(migrations.Migration):

    dependencies = [
        ("sessions_app", "0015_episode_vector_inline"),
    ]

    operations = [
        migrations.RunPython(to_int8, to_float16),
    ]
