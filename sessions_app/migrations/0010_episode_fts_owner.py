"""SQLite: the full-text index holds each episode's owner, so a search
across an owner's sessions filters by owner inside the index
(``sessions_app.search.schema``). PostgreSQL: nothing (its index has held
the owner since 0008)."""

from django.db import migrations

from sessions_app.search.schema import index_owner, unindex_owner


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0009_idempotency_key")]

    operations = [migrations.RunPython(index_owner, unindex_owner, elidable=False)]
