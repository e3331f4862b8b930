"""No event may take the name of the tool an MCP seat adds after the Menu."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from engine import agent, define_event, jr2_setup
from engine.core.errors import MachineError


class Empty(BaseModel):
    pass


def test_create_machine_refuses_an_event_named_await_turn() -> None:
    clash = define_event(name="await_turn", input=Empty)
    with pytest.raises(MachineError, match=r'the event "await_turn" on the Menu of the Agent "worker".*rename it'):
        jr2_setup(events=[clash], actors={"worker": agent("script/x", "Work.")}).create_machine(
            {
                "id": "m",
                "initial": "work",
                "states": {
                    "work": {"invoke": {"src": "worker", "input": {"prompt": "Work."}}, "on": {"await_turn": "done"}},
                    "done": {"type": "final"},
                },
            }
        )
