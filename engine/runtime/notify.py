"""Telling viewers a run moved: one message to the channel layer groups `run-<id>`, `workflow-<name>` and `runs`
(the runs list, which shows every run) after each commit, and to the group `gates` when the commit opened or closed
a Gate (the Gate inbox and every page's count of open Gates listen there). Group messages are lossy notices
(Channels drops them when a channel is full), so they carry no state: a listener reads the committed run when it
hears one."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from channels.layers import get_channel_layer

__all__ = ["notify", "run_group", "workflow_group", "GATES_GROUP", "RUNS_GROUP"]

#: The group told when any run's open Gates change.
GATES_GROUP = "gates"
#: The group told after every commit of any run (the runs list `/runs/`).
RUNS_GROUP = "runs"

log = logging.getLogger("engine.runtime")


def run_group(run_id: str) -> str:
    return f"run-{run_id}"


def workflow_group(workflow: str) -> str:
    return f"workflow-{workflow}"


def notify(run_id: str, workflow: str, status: str, seq: int, updated: str = "", gates: bool = False) -> None:
    """Send `run.updated` to the run's, its workflow's and the runs list's groups (and to `gates` when `gates`: the
    commit opened or closed a Gate, or the run stopped) without waiting (a slow layer never holds a run up).
    `updated` is the commit's time (the Run row's `updated_at`), by which a listener knows whether its view is
    current."""
    layer = get_channel_layer()
    if layer is None:
        return
    message: dict[str, Any] = {
        "type": "run.updated",
        "run": run_id,
        "workflow": workflow,
        "status": status,
        "seq": seq,
        "updated": updated,
    }
    loop = asyncio.get_running_loop()
    groups = (run_group(run_id), workflow_group(workflow), RUNS_GROUP) + ((GATES_GROUP,) if gates else ())
    for group in groups:
        task = loop.create_task(layer.group_send(group, dict(message)))
        task.add_done_callback(_report)


def _report(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("telling the channel layer failed: %r", task.exception())
