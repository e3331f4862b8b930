"""Injection (OWASP A03) through a workflow's input into a command Effect's argv, on a live `jr2 up`: the door's text
goes over HTTP into the run, then as one argument to the command (an argv list, no shell). Shell metacharacters
arrive as the same bytes, one argument, and nothing they spell is run."""

from __future__ import annotations

import json

import pytest

from tests.live_server import LiveServer


@pytest.mark.parametrize("shape", ["semicolon", "subshell", "backticks", "pipe", "quotes", "newline", "glob"])
def test_shell_metacharacters_in_a_workflow_input_reach_the_command_as_one_literal_argument(
    site: LiveServer, shape: str
) -> None:
    marker = site.folder / f"pwned-{shape}"
    payload = {
        "semicolon": f"x; touch {marker}",
        "subshell": f"$(touch {marker})",
        "backticks": f"`touch {marker}`",
        "pipe": f"x | touch {marker} && touch {marker}",
        "quotes": f"'\"; touch {marker}; echo \"'",
        "newline": f"x\ntouch {marker}\n",
        "glob": "* ~ $HOME ${PATH} > out.txt 2>&1 &",
    }[shape]
    run_id = site.start_run("echo", {"text": payload})
    run = site.wait_for(run_id, "done", "failed")
    assert run["status"] == "done", run
    assert json.loads(run["output"]["printed"]) == [payload], "the argument arrived changed or split"
    assert not marker.exists(), f"{payload!r} ran a command"
    assert not (site.folder / "out.txt").exists()


def test_an_effect_input_cannot_turn_its_args_into_a_shell_string(site: LiveServer) -> None:
    """`args` must be a list of strings: a string is refused (it would be split by someone), not run."""
    from engine.runtime.effects import _command_plan, _Failed

    with pytest.raises(_Failed, match="args must be a list of strings"):
        _command_plan({"argv": ["echo"]}, {"args": "x; rm -rf /"}, None)
    argv, _, _, _ = _command_plan({"argv": ["echo"]}, {"args": ["x; rm -rf /"]}, None)
    assert argv == ["echo", "x; rm -rf /"]
