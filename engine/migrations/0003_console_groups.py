"""The two groups the Console's permissions are handed out through: "gate-answerers" answer Gates; "operators" also
start and cancel runs and play Agents' seats."""

from typing import Any

from django.db import migrations

GROUPS = {
    "gate-answerers": ["answer_gate"],
    "operators": ["answer_gate", "start_run", "cancel_run", "play_seat"],
}


def create_groups(apps: Any, schema_editor: Any) -> None:
    from django.contrib.auth.management import create_permissions

    engine = apps.get_app_config("engine")
    engine.models_module = True
    create_permissions(engine, apps=apps, verbosity=0)
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, codenames in GROUPS.items():
        group, _ = Group.objects.get_or_create(name=name)
        group.permissions.add(*Permission.objects.filter(content_type__app_label="engine", codename__in=codenames))


def remove_groups(apps: Any, schema_editor: Any) -> None:
    apps.get_model("auth", "Group").objects.filter(name__in=GROUPS).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("engine", "0002_play_seat"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]
    operations = [migrations.RunPython(create_groups, remove_groups)]
