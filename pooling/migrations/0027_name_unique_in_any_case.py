"""Collection and pool names unique in any case (`Owned.Meta.constraints`): the pages, the API and the
commands refuse a name that differs from a taken one only in case; the database now holds it too, against
two creations racing past those checks.

A database made before the checks may hold two such names: then this migration stops, naming them, and
changes nothing (rename all but one of each: a collection in the admin, a pool with `manage.py shell`;
then migrate again)."""

import django.db.models.functions.text
from django.db import migrations, models


def refuse_names_alike(apps, schema_editor):
    alike = []
    for model in ("Collection", "Pool"):
        names: dict[str, list[str]] = {}
        for name in apps.get_model("pooling", model).objects.values_list("name", flat=True):
            names.setdefault(name.lower(), []).append(name)
        alike += [f"{model.lower()}s {', '.join(sorted(group))}" for group in names.values() if len(group) > 1]
    if alike:
        raise RuntimeError(
            "names that differ only in case are one; rename all but one of each before migrating: "
            + "; ".join(alike)
        )


class Migration(migrations.Migration):

    dependencies = [
        ('pooling', '0026_item_need'),
    ]

    operations = [
        migrations.RunPython(refuse_names_alike, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='collection',
            constraint=models.UniqueConstraint(django.db.models.functions.text.Lower('name'), name='collection_name_unique_in_any_case', violation_error_message='This name is taken in another case (names that differ only in case are one).'),
        ),
        migrations.AddConstraint(
            model_name='pool',
            constraint=models.UniqueConstraint(django.db.models.functions.text.Lower('name'), name='pool_name_unique_in_any_case', violation_error_message='This name is taken in another case (names that differ only in case are one).'),
        ),
    ]
