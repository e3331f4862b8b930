"""No event may take the name of the tool an MCP seat adds after the Menu."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from engine import agent, define_event, jr2_setup
from engine.core.errors import MachineError
from engine.core.statechart.errors import ConfigError


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


def test_an_agent_played_over_mcp_is_declared_with_model_mcp() -> None:
    slot = agent(model="mcp", instructions="Code.", dials={"timeout_s": 5})
    assert slot.model == "mcp" and slot.provider == "mcp"
    with pytest.raises(ConfigError, match=r"or 'mcp' for an Agent whose seat an MCP client always plays"):
        agent(model="mcp-client", instructions="Code.")
    with pytest.raises(ConfigError, match="the Dial timeout_s is a number of seconds above 0; got 0"):
        agent(model="mcp", instructions="Code.", dials={"timeout_s": 0})
