"""Built-in actions, one module each: a pure `resolve`, and data for the host to execute."""

from engine.core.statechart.actions.assign import Assign, assign
from engine.core.statechart.actions.base import BuiltinAction, ExecutableAction
from engine.core.statechart.actions.cancel import cancel
from engine.core.statechart.actions.emit import emit
from engine.core.statechart.actions.enqueue import enqueue_actions
from engine.core.statechart.actions.log import log
from engine.core.statechart.actions.raise_ import raise_
from engine.core.statechart.actions.send import forward_to, send_parent, send_to
from engine.core.statechart.actions.spawn import spawn_child
from engine.core.statechart.actions.stop import stop_child

__all__ = [
    "Assign",
    "BuiltinAction",
    "ExecutableAction",
    "assign",
    "cancel",
    "emit",
    "enqueue_actions",
    "forward_to",
    "log",
    "raise_",
    "send_parent",
    "send_to",
    "spawn_child",
    "stop_child",
]
