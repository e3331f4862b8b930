"""Built-in actions, one module each: a pure `resolve`, and data for the host to execute."""
from .assign import Assign, assign
from .base import BuiltinAction, ExecutableAction
from .cancel import cancel
from .emit import emit
from .enqueue import enqueue_actions
from .log import log
from .raise_ import raise_
from .send import forward_to, send_parent, send_to
from .spawn import spawn_child
from .stop import stop_child

__all__ = [
    "Assign", "BuiltinAction", "ExecutableAction", "assign", "cancel", "emit", "enqueue_actions", "forward_to",
    "log", "raise_", "send_parent", "send_to", "spawn_child", "stop_child",
]
