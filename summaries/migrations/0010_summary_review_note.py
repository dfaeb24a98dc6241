"""A curated row that covered a deleted exchange says so until a person saves it again."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("summaries", "0009_summary_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="summary",
            name="review_note",
            field=models.TextField(blank=True, db_default="", default=""),
        ),
    ]
