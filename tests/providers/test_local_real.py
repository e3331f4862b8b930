"""A real model, offline: a run driven end to end through the Host against llama.cpp's server running
SmolLM2-135M-Instruct (tests/llama_server.py, `local/smollm2`).

Nothing is scripted on the model's side: the Turn loop sends real requests through the `openai` SDK, the server's
grammar writes each call's arguments to its Menu schema, the calls become picks, the answers go back to the model
as the user's text (`JR2_LOCAL_TOOL_RESULTS=user`), and a scripted Gate answerer (the editor) replies through
`Host.deliver` when the Gate opens. The Turn is recorded like any other: requests, responses, tokens, latency.

The workflow is tests/local_workflow.py's `notes_once` (`notes` with `ask` allowed only until the editor has
replied; that module says why not `notes` itself).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from engine.runtime.host import Host
from engine.runtime.providers import reset_providers
from tests.llama_server import MODEL, PROVIDER_SETTINGS, LlamaServer
from tests.local_workflow import DIALS, DOOR, REPLY, notes_once
from tests.runtime.hosting import hosted, records, status, until

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """One llama.cpp server for the module (loading the model takes a few seconds)."""
    with LlamaServer(log=tmp_path_factory.mktemp("llama") / "server.log") as server:
        yield server


@pytest.fixture
def on_llama(llama: LlamaServer, settings: Any) -> Iterator[LlamaServer]:
    """The local provider pointed at the server, told how to talk to it; no scripted stand-ins."""
    settings.JR2_SCRIPTED = False
    settings.JR2_LOCAL_BASE_URL = llama.base_url
    settings.JR2_PROVIDER_MAX_RETRIES = 0
    settings.JR2_PROVIDER_TIMEOUT = 120.0
    for name, value in PROVIDER_SETTINGS.items():
        setattr(settings, name, value)
    reset_providers()
    try:
        yield llama
    finally:
        reset_providers()


def test_a_real_model_walks_the_machine_to_its_final_state(on_llama: LlamaServer) -> None:
    found: dict[str, Any] = {}

    async def body(host: Host) -> None:
        run_id = await host.start_run("notes_once", DOOR)
        run = await until(host, status(run_id, "waiting", "failed"), timeout=120)
        assert run.status == "waiting", run.reason
        [gate] = run.view["gates"]
        found["question"] = gate["meta"]["question"]
        delivery = await host.deliver(run_id, "gate", gate=gate["id"], event="reply", params={"text": REPLY})
        assert delivery.outcome == "delivered"
        await until(host, status(run_id, "done", "failed"), timeout=120)
        found.update(await host.db(records, run_id))

    hosted({"notes_once": notes_once()}, body, owner="local-model-test")

    run, journal, calls, messages = found["run"], found["journal"], found["calls"], found["messages"]
    assert (run.status, run.reason) == ("done", "")
    assert isinstance(run.output["notes"], str) and len(run.output["notes"]) <= 400

    # the model's two calls were the picks, with arguments that fit the Menu's schemas
    picks = [(e["agent"], e["event"], e["params"]) for e in journal if e["kind"] == "pick"]
    assert picks == [
        ("writer", "ask", {"question": found["question"]}),
        ("writer", "done", {"notes": run.output["notes"]}),
    ]
    assert 0 < len(found["question"]) <= 160
    assert [e["kind"] for e in journal if e["kind"] != "advance"] == ["start", "pick", "gate", "pick"]

    # the Turn and its model calls are recorded like any other; a `done` refused (none is expected: the grammar
    # keeps the call to its schema) would have gone back to the model, which then called it again
    [turn] = found["turns"]
    assert (turn.model, turn.declared_model, turn.scripted, turn.status) == (
        f"local/{MODEL}",
        f"local/{MODEL}",
        False,
        "ended",
    )
    assert all(c.status == "done" and c.stop_reason == "tool_use" for c in calls)
    assert [[t["name"] for t in c.tool_calls] for c in calls] == [["ask"]] + [["done"]] * (len(calls) - 1)
    assert all(t["error"] for c in calls[1:-1] for t in c.tool_calls) and not calls[-1].tool_calls[0]["error"]
    for call in calls:
        assert call.model == f"local/{MODEL}" and not call.scripted and call.error == ""
        assert call.input_tokens > 0 and call.output_tokens > 0 and call.latency_ms and call.latency_ms > 0
        assert call.request["dials"] == DIALS
        assert call.response["object"] == "chat.completion" and call.response["model"]
    assert calls[1].input_tokens > calls[0].input_tokens  # it was sent the answer too
    assert (turn.input_tokens, turn.output_tokens) == (
        sum(c.input_tokens for c in calls),
        sum(c.output_tokens for c in calls),
    )

    # what went back to the model: the editor's reply, then each refusal, each with the Allowed picks read after it;
    # every request was sent the whole conversation before it
    kinds = [m.kind for m in messages]
    assert kinds == ["prompt", "reply", "tool_result"] + ["reply", "refusal"] * (len(calls) - 2) + [
        "reply",
        "tool_result",
    ]
    assert [c.messages for c in calls] == [1 + 2 * i for i in range(len(calls))]
    assert messages[2].content[0]["content"] == f"The editor replied: {REPLY}\n\nAllowed picks now: done."
    for refusal in messages[4:-2:2]:
        [block] = refusal.content
        assert block["is_error"] and block["content"].endswith("Allowed picks now: done.")
