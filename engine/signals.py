"""What happens beside the ORM when a run is deleted: its Agents' workspace folders go with it.

The hook is Django's `post_delete` signal, so every way of deleting a run (the admin, a queryset in a shell, a
management command) removes them; the folder is removed only once the deletion is committed, so a deletion that
is rolled back keeps it.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.db.models.signals import post_delete
from django.dispatch import receiver

from engine.models import Run
from engine.runtime.workspace.sandbox import WorkspaceError, remove_run_folder

__all__ = ["remove_workspaces"]

log = logging.getLogger("engine.runtime.workspace.sandbox")


@receiver(post_delete, sender=Run, dispatch_uid="engine.remove_workspaces")
def remove_workspaces(sender: Any, instance: Run, **kwargs: Any) -> None:
    run_id = instance.pk

    def remove() -> None:
        try:
            remove_run_folder(run_id)
        except (OSError, WorkspaceError) as err:
            log.warning("run %s was deleted, but its workspaces could not be: %s", run_id, err)

    transaction.on_commit(remove, using=kwargs.get("using"))
