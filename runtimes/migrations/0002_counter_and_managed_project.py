"""The revision counter's one row and the managed project `nodus`, which always exists."""

from django.db import migrations


def create_rows(apps, schema_editor):
    apps.get_model("runtimes", "RevisionCounter").objects.get_or_create(pk=1)
    apps.get_model("runtimes", "Project").objects.get_or_create(
        name="nodus", defaults={"display_name": "Managed catalog"}
    )


class Migration(migrations.Migration):
    dependencies = [("runtimes", "0001_initial")]
    operations = [migrations.RunPython(create_rows, migrations.RunPython.noop)]
