"""Whose memory a session is: ``end_user`` and ``memory_scope``. Existing
sessions stay ``session`` (what they read and lend does not change), except
those the OpenAI endpoint made for a request's ``user`` (kept in their
metadata as ``openai_user``): they get that ``end_user`` and ``shared``, the
memory of that end user they already were. A ``user`` longer than
``end_user`` takes (200 characters) is left as it was, rather than cut to a
prefix another end user could share."""

from django.conf import settings
from django.db import migrations, models

OPENAI_USER_KEY = "openai_user"
END_USER_MAX_CHARS = 200


def openai_users_become_end_users(apps, schema_editor):
    ChatSession = apps.get_model("sessions_app", "ChatSession")
    made_for_a_user = ChatSession.objects.filter(metadata__has_key=OPENAI_USER_KEY)
    for pk, metadata in made_for_a_user.values_list("pk", "metadata").iterator(chunk_size=500):
        end_user = metadata.get(OPENAI_USER_KEY)
        if isinstance(end_user, str) and end_user and len(end_user) <= END_USER_MAX_CHARS:
            ChatSession.objects.filter(pk=pk).update(end_user=end_user, memory_scope="shared")


class Migration(migrations.Migration):

    dependencies = [
        ("sessions_app", "0011_episode_vector_spans"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="chatsession",
            name="end_user",
            field=models.CharField(blank=True, default="", max_length=200),
        ),
        migrations.AddField(
            model_name="chatsession",
            name="memory_scope",
            field=models.CharField(
                choices=[("session", "Session"), ("shared", "Shared")], default="session", max_length=8
            ),
        ),
        migrations.AddIndex(
            model_name="chatsession",
            index=models.Index(fields=["owner", "end_user", "memory_scope"], name="session_person_scope_idx"),
        ),
        migrations.RunPython(openai_users_become_end_users, migrations.RunPython.noop),
    ]
