"""Summary rows' passage vectors in the layout episodes' now have
(``sessions_app.semantic.vectors``: each vector's scale and int8 values)."""

from django.db import migrations

from sessions_app.semantic.vector_layouts import rewriting


class Migration(migrations.Migration):
    dependencies = [
        ("summaries", "0011_utility_call_notes_kind"),
    ]

    operations = [
        rewriting("summaries", "SummaryIndex", "vectors"),
    ]
