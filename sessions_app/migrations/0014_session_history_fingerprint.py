"""Sessions the OpenAI endpoint makes keep a fingerprint of their whole
history (sessions_app.history_fingerprint), by which a stateless client's
next call finds its conversation. The sessions it made before get theirs
here, so a conversation under way continues in the newest of them."""

from django.conf import settings
from django.db import migrations, models
from django.db.models import Q

from sessions_app.history_fingerprint import history_fingerprint

#: What the endpoint named the sessions it made: one per ``user``, else one per call.
MADE_BY_THE_ENDPOINT = Q(metadata__has_key="openai_user") | Q(title="OpenAI client conversation")


def fingerprint_endpoint_sessions(apps, schema_editor):
    sessions = apps.get_model("sessions_app", "ChatSession")
    episodes = apps.get_model("sessions_app", "Episode")
    for pk in sessions.objects.filter(MADE_BY_THE_ENDPOINT).values_list("pk", flat=True).iterator():
        history = (
            episodes.objects.filter(session_id=pk)
            .order_by("position")
            .values_list("user_input", "response")
            .iterator(chunk_size=500)
        )
        sessions.objects.filter(pk=pk).update(history_fingerprint=history_fingerprint(history))


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0013_session_history_revision"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="chatsession",
            name="history_fingerprint",
            field=models.CharField(blank=True, editable=False, max_length=64, null=True),
        ),
        migrations.AddIndex(
            model_name="chatsession",
            index=models.Index(
                condition=models.Q(("history_fingerprint__isnull", False)),
                fields=["owner", "end_user", "history_fingerprint"],
                name="session_history_fp_idx",
            ),
        ),
        migrations.RunPython(fingerprint_endpoint_sessions, migrations.RunPython.noop),
    ]
