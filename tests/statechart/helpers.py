"""What the statechart tests share: a started actor, and waiting for something a timer or a thread does."""

import time

from engine.core.statechart import create_actor


def started(logic, **options):
    """`create_actor(logic, **options)`, started."""
    actor = create_actor(logic, **options)
    actor.start()
    return actor


def wait_until(condition, timeout=2.0):
    """Until `condition()` holds, or `timeout` seconds have passed (the test's assertion then says what failed)."""
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.001)
