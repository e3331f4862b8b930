"""The default clock is real time: asyncio's loop when one runs, else a timer thread. (SimulatedClock covers the
timing rules; these only show that real timers reach the actor at all.)"""

import asyncio
import threading

from engine.core.statechart import create_machine

MACHINE = create_machine(
    {"initial": "waiting", "states": {"waiting": {"after": {10: "done"}}, "done": {"type": "final"}}}
)


def test_a_real_timer_fires_from_a_thread_when_no_loop_runs():
    finished = threading.Event()
    actor = MACHINE.start()
    actor.subscribe(complete=finished.set)
    assert finished.wait(5), "the 10 ms timer never fired"
    assert actor.snapshot.value == "done"


def test_a_real_timer_fires_on_the_running_asyncio_loop():
    async def run() -> str:
        done = asyncio.Event()
        actor = MACHINE.start()
        actor.subscribe(complete=done.set)
        await asyncio.wait_for(done.wait(), 5)
        return actor.snapshot.value

    assert asyncio.run(run()) == "done"
