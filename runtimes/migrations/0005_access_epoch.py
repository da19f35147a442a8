from typing import Any

from django.db import migrations, models


def create_row(apps: Any, schema_editor: Any) -> None:
    apps.get_model("runtimes", "AccessEpoch").objects.get_or_create(pk=1)


class Migration(migrations.Migration):
    dependencies = [
        ("runtimes", "0004_membership_group_and_event_actor"),
    ]

    operations = [
        migrations.CreateModel(
            name="AccessEpoch",
            fields=[
                (
                    "id",
                    models.PositiveSmallIntegerField(default=1, primary_key=True, serialize=False),
                ),
                ("value", models.BigIntegerField(default=0)),
            ],
        ),
        migrations.RunPython(create_row, migrations.RunPython.noop),
    ]
