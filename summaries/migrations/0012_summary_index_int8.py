"""Summary rows' passage vectors in the layout episodes' now have
(``sessions_app.semantic.vectors``: each vector's scale and int8 values)."""

from django.db import migrations

from sessions_app.semantic.vector_layouts import float16_to_int8, int8_to_float16, rewrite


def to_int8(apps, schema_editor):
    rewrite(apps.get_model("summaries", "SummaryIndex"), "vectors", float16_to_int8)


def to_float16(apps, schema_editor):
    rewrite(apps.get_model("summaries", "SummaryIndex"), "vectors", int8_to_float16)


class Migration(migrations.Migration):

    dependencies = [
        ("summaries", "0011_utility_call_notes_kind"),
    ]

    operations = [
        migrations.RunPython(to_int8, to_float16),
    ]
