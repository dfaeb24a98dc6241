"""A session's history revision: raised by every deletion of an exchange and
every reply filled in, so the vectors a process keeps of it are read again."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("sessions_app", "0012_session_end_user_memory_scope"),
    ]

    operations = [
        migrations.AddField(
            model_name="chatsession",
            name="history_revision",
            field=models.PositiveIntegerField(db_default=0, default=0, editable=False),
        ),
    ]
