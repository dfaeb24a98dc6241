"""Episode vectors from float16 to each vector's scale and int8 values
(``sessions_app.semantic.vectors``): half the bytes, read back faster."""

from django.db import migrations

from sessions_app.semantic.vector_layouts import rewriting


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0015_episode_vector_inline"),
    ]

    operations = [
        rewriting("sessions_app", "EpisodeVector", "vector"),
    ]
