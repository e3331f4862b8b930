"""Telling viewers a run moved: one message to the channel layer groups `run-<id>`, `workflow-<name>` and `runs`
(the runs list, which shows every run) after each commit, and to the group `gates` when the commit opened or closed
a Gate (the Gate inbox and every page's count of open Gates listen there). Group messages are lossy notices
(Channels drops them when a channel is full), so they carry no state: a listener reads the committed run when it
hears one.

With Redis (a fleet) the notices go through their own channel layer, `notices`: Redis pub/sub (one PUBLISH a group,
pushed to every web process that listens), not the default layer's queues (four round trips a group to send, and a
receive loop of four more a message in each web process), which the hosts' wake-ups and the relayed answers keep:
those must not be lost. A listener learns it is subscribed by hearing something on its group (`heard_on`)."""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from channels.layers import BaseChannelLayer, get_channel_layer

from engine.runtime.layers import InMemoryLayer

__all__ = [
    "notify",
    "notice_layer",
    "heard_on",
    "run_group",
    "workflow_group",
    "GATES_GROUP",
    "RUNS_GROUP",
    "NOTICES",
    "PROBE",
]

#: The group told when any run's open Gates change.
GATES_GROUP = "gates"
#: The group told after every commit of any run (the runs list `/runs/`).
RUNS_GROUP = "runs"

#: The channel layer alias of the notices when they have a layer of their own (settings.CHANNEL_LAYERS).
NOTICES = "notices"
#: A message a listener sends its own group to learn that its subscription holds; every listener skips it.
PROBE = "notice.probe"
#: How long a listener waits for its probe before it sends another.
PROBE_WAIT = 0.05

log = logging.getLogger("engine.runtime")


def notice_layer() -> Any:
    """The channel layer that carries the notices: `notices` when configured (Redis pub/sub), else the default."""
    layer = get_channel_layer(NOTICES)
    return layer if layer is not None else get_channel_layer()


async def heard_on(layer: Any, group: str, channel: str) -> None:
    """Return once `channel`, just added to `group`, hears what is sent to the group. The default layers add it
    before `group_add` returns; Redis pub/sub sends SUBSCRIBE without waiting for the server, so a commit told
    before the server took it would be lost, after the page's first read. A probe sent to the group and heard back
    (or any notice heard) proves the subscription; until then a probe goes out every PROBE_WAIT seconds. The
    receive is never cancelled here (pub/sub drops a channel whose receive is cancelled)."""
    if isinstance(layer, BaseChannelLayer):
        return
    probe = {"type": PROBE, "id": uuid.uuid4().hex}
    heard = asyncio.ensure_future(layer.receive(channel))
    while not heard.done():
        await layer.group_send(group, probe)
        await asyncio.wait({heard}, timeout=PROBE_WAIT)
    heard.result()


def run_group(run_id: str) -> str:
    return f"run-{run_id}"


def workflow_group(workflow: str) -> str:
    return f"workflow-{workflow}"


def notify(run_id: str, workflow: str, status: str, seq: int, updated: str = "", gates: bool = False) -> None:
    """Send `run.updated` to the run's, its workflow's and the runs list's groups (and to `gates` when `gates`: the
    commit opened or closed a Gate, or the run stopped) without waiting (a slow layer never holds a run up).
    `updated` is the commit's time (the Run row's `updated_at`), by which a listener knows whether its view is
    current."""
    layer = notice_layer()
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
    groups = (run_group(run_id), workflow_group(workflow), RUNS_GROUP) + ((GATES_GROUP,) if gates else ())
    if isinstance(layer, InMemoryLayer):
        layer.tell(groups, message)
        return
    loop = asyncio.get_running_loop()
    for group in groups:
        task = loop.create_task(layer.group_send(group, dict(message)))
        task.add_done_callback(_report)


def _report(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("telling the channel layer failed: %r", task.exception())
