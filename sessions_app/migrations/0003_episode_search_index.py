"""The full-text index of episodes: see ``sessions_app.search.schema``."""

from django.db import migrations

from sessions_app.search.schema import create_index, drop_index


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0002_episode_session_index_only")]

    operations = [migrations.RunPython(create_index, drop_index, elidable=False)]
