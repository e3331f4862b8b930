"""Relayed inputs are kept until delivered, never withdrawn: their status says delivered or refused (with the
reason in words), and who sent them is kept for the Console."""

from django.db import migrations, models


def settle(apps, schema_editor):
    """An input answered before this migration: delivered or refused by what the run answered; one withdrawn by
    its sender: refused, saying so."""
    RunInput = apps.get_model("engine", "RunInput")
    for row in RunInput.objects.filter(status__in=("answered", "withdrawn")).iterator():
        if row.status == "withdrawn":
            row.status, row.reason = "refused", "withdrawn: no worker took it in time, and its sender was told so"
        else:
            delivery = (row.outcome or {}).get("delivery") if isinstance(row.outcome, dict) else None
            error = (row.outcome or {}).get("error") if isinstance(row.outcome, dict) else None
            if delivery and delivery.get("outcome") != "delivered":
                row.status, row.reason = "refused", delivery.get("error") or delivery.get("outcome") or ""
            elif error:
                row.status, row.reason = "refused", error
            else:
                row.status = "delivered"
        row.save(update_fields=["status", "reason"])


class Migration(migrations.Migration):
    dependencies = [
        ("engine", "0012_notify"),
    ]

    operations = [
        migrations.AddField(
            model_name="runinput",
            name="reason",
            field=models.TextField(blank=True, default="", help_text="why it was refused, in words"),
        ),
        migrations.AddField(
            model_name="runinput",
            name="sent_by",
            field=models.CharField(blank=True, default="", help_text="the username of who sent it", max_length=150),
        ),
        migrations.AlterField(
            model_name="runinput",
            name="answered_by",
            field=models.CharField(blank=True, help_text="the host that delivered or refused it", max_length=100),
        ),
        migrations.AlterField(
            model_name="runinput",
            name="answered_at",
            field=models.DateTimeField(blank=True, help_text="when it was delivered or refused", null=True),
        ),
        migrations.AlterField(
            model_name="runinput",
            name="status",
            field=models.CharField(
                choices=[("pending", "pending"), ("delivered", "delivered"), ("refused", "refused")],
                default="pending",
                max_length=16,
            ),
        ),
        migrations.RunPython(settle, migrations.RunPython.noop),
    ]
