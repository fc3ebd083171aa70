"""An item's need (`PoolItem.need`): its required judgements, and for a gold item at least one from every
rater of its pool (`gold_need`, which the judging app's migration 0017 fills for the gold items there are)."""

import django.db.models.functions.comparison
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('pooling', '0025_run_topic_updated_at'),
    ]

    operations = [
        migrations.AddField(
            model_name='poolitem',
            name='gold_need',
            field=models.PositiveIntegerField(db_default=0, default=0),
        ),
        migrations.AddField(
            model_name='poolitem',
            name='need',
            field=models.GeneratedField(db_persist=True, expression=django.db.models.functions.comparison.Greatest(models.F('required_judgements'), models.F('gold_need')), output_field=models.PositiveIntegerField()),
        ),
    ]
