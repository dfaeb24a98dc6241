"""Each summary row's range (and each revision's) as positions (``Episode.position``), beside its ids."""

from django.db import migrations, models
from django.db.models import Max, Min, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce


def fill_positions(apps, schema_editor):
    """The positions of the first and last episode in each row's (and revision's) range."""
    Episode = apps.get_model("sessions_app", "Episode")
    Summary = apps.get_model("summaries", "Summary")
    # An UPDATE takes no join: a revision's session through a subquery of its row.
    revision_session = Subquery(
        Summary.objects.filter(pk=OuterRef(OuterRef("summary_id"))).values("session_id")
    )
    for model, session in (("Summary", OuterRef("session_id")), ("SummaryRevision", revision_session)):
        covered = (
            Episode.objects.filter(
                session_id=session,
                id__gte=OuterRef("first_episode_id"),
                id__lte=OuterRef("last_episode_id"),
            )
            .order_by()
            .values("session_id")
        )
        apps.get_model("summaries", model).objects.update(
            first_position=Coalesce(Subquery(covered.annotate(m=Min("position")).values("m")), Value(0)),
            last_position=Coalesce(Subquery(covered.annotate(m=Max("position")).values("m")), Value(0)),
        )


class Migration(migrations.Migration):

    dependencies = [
        ("sessions_app", "0006_episode_position"),
        ("summaries", "0006_model_call_cap"),
    ]

    operations = [
        migrations.AddField(
            model_name="summary",
            name="first_position",
            field=models.PositiveIntegerField(default=0, editable=False),
        ),
        migrations.AddField(
            model_name="summary",
            name="last_position",
            field=models.PositiveIntegerField(default=0, editable=False),
        ),
        migrations.AddField(
            model_name="summaryrevision",
            name="first_position",
            field=models.PositiveIntegerField(default=0, editable=False),
        ),
        migrations.AddField(
            model_name="summaryrevision",
            name="last_position",
            field=models.PositiveIntegerField(default=0, editable=False),
        ),
        migrations.RunPython(fill_positions, migrations.RunPython.noop),
    ]
