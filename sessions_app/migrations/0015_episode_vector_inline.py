"""On PostgreSQL an episode's vector row stays in the table's own pages up
to about 4 KB (five vectors) instead of going to its TOAST table past 2 KB
(three). A question's candidates' rows are read by their ids, a few hundred
of them: a row kept out of line costs an index probe and a page of the TOAST
table for each 2 KB, on top of its own page (bench/README.md, read_scaling.py).
Half a page, not more: two such rows fill a page, where a row of 5 KB kept
inline would leave a page's other 3 KB unused. Rows written before stay
where they are until they are written again; both are read alike."""

from django.db import migrations

TABLE = "sessions_app_episodevector"
#: A row is moved out of line only past this (toast_tuple_target; PostgreSQL's default is 2032).
INLINE_BYTES = 4080


def keep_inline(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"ALTER TABLE {TABLE} SET (toast_tuple_target = {INLINE_BYTES})")


def as_before(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"ALTER TABLE {TABLE} RESET (toast_tuple_target)")


class Migration(migrations.Migration):

    dependencies = [
        ("sessions_app", "0014_session_history_fingerprint"),
    ]

    operations = [
        migrations.RunPython(keep_inline, as_before),
    ]
