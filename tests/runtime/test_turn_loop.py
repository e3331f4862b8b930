"""The Turn loop over the real SDKs: whole runs whose Agents are played by the fake model server
(tests/fakes/model_server.py) through the official `anthropic` and `openai` clients, over real HTTP, with a real
SQLite database. Nothing in the SDKs or the Turn loop is replaced: each test scripts the model's replies, then
checks the requests the server received and the records the run wrote.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from pydantic import BaseModel, Field

from engine import agent, answer, assign, define_event, fail, jr2_setup
from engine.core.prompts import BRIEFING, reprompt_message
from engine.core.turn_policy import TurnPolicy
from engine.core.workflow import Machine
from engine.models import ModelCall
from engine.runtime.host import Host
from engine.runtime.plan import UNANSWERED
from engine.runtime.providers import reset_providers
from tests.fakes.model_server import ModelServer, Recorded, Reply, ToolUse, error, text, tool_call
from tests.runtime.hosting import hosted as hosted_with
from tests.runtime.hosting import records, status, until
from workflows import notes

pytestmark = pytest.mark.django_db(transaction=True)

DOOR = {"changes": "Faster start-up.\nA new export button."}
ALLOWED_LINE = re.compile(r"Allowed picks now: [^\n]*\.\Z")
CACHE = {"type": "ephemeral"}
KEY = "sk-ant-test-not-a-real-key"


def hosted(workflows: dict[str, Machine], body: Callable[[Host], Awaitable[None]]) -> None:
    hosted_with(workflows, body, owner="turn-loop-test")


# -- the fake model, the host and waiting -------------------------------------------------------------------------


@pytest.fixture
def server(settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModelServer]:
    """The fake model server, with both providers pointed at it, a dummy Anthropic key and no scripted stand-ins."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    settings.JR2_SCRIPTED = False
    settings.JR2_PROVIDER_MAX_RETRIES = 1
    settings.JR2_PROVIDER_TIMEOUT = 20.0
    with ModelServer() as fake:
        settings.JR2_ANTHROPIC_BASE_URL = fake.url
        settings.JR2_LOCAL_BASE_URL = fake.openai_url
        reset_providers()
        try:
            yield fake
        finally:
            reset_providers()


async def requests_made(server: ModelServer, count: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while server.count() < count:
        if time.monotonic() > deadline:
            raise AssertionError(f"the model was asked {server.count()} times, not {count}")
        await asyncio.sleep(0.01)


def kinds(journal: list[dict[str, Any]]) -> list[str]:
    return [e["kind"] for e in journal if e["kind"] != "advance"]


# -- reading the recorded requests ------------------------------------------------------------------------------


def api_key(request: Recorded) -> str:
    """The key the SDK sent (older SDKs send `x-api-key`, newer ones a bearer token)."""
    return request.headers.get("x-api-key") or request.headers.get("authorization", "").removeprefix("Bearer ")


def tools_bytes(request: Recorded) -> bytes:
    """The tools block exactly as the SDK serialized it into the request body."""
    body = request.raw.decode()
    decoder = json.JSONDecoder()
    for match in re.finditer(r'"tools"\s*:\s*', body):
        try:
            value, end = decoder.raw_decode(body, match.end())
        except json.JSONDecodeError:
            continue
        if value == request.body["tools"]:
            return body[match.end() : end].encode()
    raise AssertionError("the request has no tools block")


def tools_hashes(requests: list[Recorded]) -> set[str]:
    return {hashlib.sha256(tools_bytes(r)).hexdigest() for r in requests}


def conversation(request: Recorded) -> list[dict[str, Any]]:
    """The request's messages in one shape for both APIs: {"role", "texts", "uses": [(id, name)], "results":
    [(id, content, is_error)]}; OpenAI's system message is left out (Anthropic sends it apart)."""
    out: list[dict[str, Any]] = []
    for message in request.body["messages"]:
        role, content = message["role"], message.get("content")
        if role == "system":
            continue
        if role == "tool":
            content_text = str(content)
            error_ = content_text.startswith("Error: ")
            result = (message["tool_call_id"], content_text.removeprefix("Error: "), error_)
            if out and out[-1]["role"] == "user" and not out[-1]["texts"]:
                out[-1]["results"].append(result)
            else:
                out.append({"role": "user", "texts": [], "uses": [], "results": [result]})
            continue
        entry: dict[str, Any] = {"role": role, "texts": [], "uses": [], "results": []}
        if isinstance(content, str):
            entry["texts"].append(content)
        for block in content if isinstance(content, list) else []:
            if block["type"] == "text":
                entry["texts"].append(block["text"])
            elif block["type"] == "tool_use":
                entry["uses"].append((block["id"], block["name"]))
            elif block["type"] == "tool_result":
                entry["results"].append((block["tool_use_id"], block["content"], bool(block.get("is_error"))))
        for call in message.get("tool_calls") or []:
            entry["uses"].append((call["id"], call["function"]["name"]))
        if role == "user" and out and out[-1]["role"] == "user" and out[-1]["results"] and not out[-1]["texts"]:
            out[-1]["texts"].extend(entry["texts"])  # OpenAI: the text after the tool messages of one turn
            continue
        out.append(entry)
    return out


def last_words(request: Recorded) -> str:
    """What the model read last: the last text, else the last tool result."""
    last = conversation(request)[-1]
    assert last["role"] == "user"
    return str(last["texts"][-1] if last["texts"] else last["results"][-1][1])


def assert_every_call_answered(request: Recorded) -> None:
    """The APIs' rule: every tool call of a reply has its tool result in the message right after it."""
    said = conversation(request)
    for index, message in enumerate(said):
        if message["uses"]:
            following = said[index + 1] if index + 1 < len(said) else {"role": "", "results": []}
            assert following["role"] == "user", said
            assert [r[0] for r in following["results"]] == [u[0] for u in message["uses"]], said


def unmarked(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages without `cache_control` (Anthropic's moving breakpoint)."""
    return [
        {**m, "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]]}
        if isinstance(m.get("content"), list)
        else m
        for m in messages
    ]


def assert_one_conversation(requests: list[Recorded], calls: list[ModelCall]) -> None:
    """Consecutive requests of one conversation: each carries the one before it unchanged (so a prompt cache
    holds), then the model's reply to it, then a tool result for every tool call of that reply, and ends with the
    Allowed picks. Anthropic's moving cache breakpoint is the only difference allowed: it leaves the block it sat
    on and goes to the new last block."""
    assert len(requests) == len(calls)
    for before, after, call in zip(requests, requests[1:], calls):
        old, new = unmarked(before.body["messages"]), unmarked(after.body["messages"])
        assert new[: len(old)] == old
        said = conversation(after)[len(conversation(before)) :]
        assert said[0]["role"] == "assistant"
        assert [use[0] for use in said[0]["uses"]] == [c["id"] for c in call.tool_calls]
        if call.tool_calls:
            assert [r[0] for r in said[1]["results"]] == [c["id"] for c in call.tool_calls]
    for request in requests:
        assert ALLOWED_LINE.search(last_words(request)), last_words(request)
        assert_every_call_answered(request)


# -- workflows of the tests -------------------------------------------------------------------------------------


def writer_machine(machine_id: str, model: str) -> Machine:
    """The notes workflow of SPEC.md with another model for its writer."""
    return jr2_setup(
        events=[notes.ask, notes.done, notes.reply],
        actors={
            "writer": agent(
                model=model,
                instructions="You write short release notes. Ask the editor at least one question before you finish.",
            ),
            "fail": fail(),
        },
    ).create_machine(
        {
            "id": machine_id,
            "input": notes.Door,
            "context": lambda input: {"changes": input.changes, "replies": 0},
            "on": {"agent.fault": ".failed"},
            "initial": "writing",
            "states": {
                "writing": {
                    "invoke": {
                        "src": "writer",
                        "input": lambda context: {
                            "prompt": "Write the release notes for these changes:\n" + context["changes"]
                        },
                    },
                    "on": {"done": {"guard": lambda context: context["replies"] > 0, "target": "published"}},
                    "initial": "drafting",
                    "states": {
                        "drafting": {"on": {"ask": "asking"}},
                        "asking": {
                            "invoke": {"src": "gate"},
                            "on": {
                                "reply": {
                                    "target": "drafting",
                                    "actions": [
                                        assign(replies=lambda context: context["replies"] + 1),
                                        answer(lambda event: "The editor replied: " + event.text),
                                    ],
                                }
                            },
                        },
                    },
                },
                "published": {"type": "final"},
                "failed": {
                    "invoke": {
                        "src": "fail",
                        "input": lambda event: {"reason": "the writer could not go on: " + str(event.get("reason"))},
                    }
                },
            },
            "output": lambda context: {"replies": context["replies"]},
        }
    )


def local_notes() -> Machine:
    return writer_machine("notes_local", "local/qwen3-8b")


def machines(provider: str) -> tuple[str, dict[str, Machine]]:
    """The notes workflow played over `provider`: its name and the workflows to host."""
    if provider == "anthropic":
        return "notes", {"notes": notes.machine}
    return "notes_local", {"notes_local": local_notes()}


class Note(BaseModel):
    note: str = Field(description="One line about this step.")


class Empty(BaseModel):
    pass


hop = define_event(name="hop", input=Note, description="Finish this step and go on to the next.")
stop = define_event(name="stop", input=Empty, description="Stop the work where it is.")


def relay_machine() -> Machine:
    """Two Turns of `talker` that continue one conversation (anthropic), then two of `walker` that do not (local)."""

    def step(agent_name: str, prompt: str, target: str, continues: bool) -> dict[str, Any]:
        return {
            "invoke": {"src": agent_name, "input": {"prompt": prompt, "continue": continues}},
            "on": {"hop": {"target": target, "actions": answer(lambda event: "You noted: " + event.note)}},
        }

    return jr2_setup(
        events=[hop],
        actors={
            "talker": agent(model="anthropic/claude-haiku-5-5", instructions="You talk through the steps."),
            "walker": agent(model="local/qwen3-8b", instructions="You walk through the steps."),
        },
    ).create_machine(
        {
            "id": "relay",
            "initial": "one",
            "states": {
                "one": step("talker", "Step one.", "two", True),
                "two": step("talker", "Step two.", "three", True),
                "three": step("walker", "Step three.", "four", False),
                "four": step("walker", "Step four.", "over", False),
                "over": {"type": "final"},
            },
            "output": lambda context: {"ok": True},
        }
    )


def desk_machine() -> Machine:
    """A Gate above the worker's state: the desk can stop the work while the worker's model is still asked."""
    return jr2_setup(
        events=[hop, stop],
        actors={
            "worker": agent(model="anthropic/claude-haiku-5-5", instructions="You work."),
        },
    ).create_machine(
        {
            "id": "desk",
            "initial": "review",
            "states": {
                "review": {
                    "invoke": {"src": "gate", "id": "desk"},
                    "on": {"stop": "wrapping"},
                    "initial": "working",
                    "states": {
                        "working": {
                            "invoke": {"src": "worker", "input": {"prompt": "Do the work."}},
                            "on": {"hop": "#finished"},
                        }
                    },
                },
                "wrapping": {"invoke": {"src": "worker", "input": {"prompt": "Wrap up."}}, "on": {"hop": "finished"}},
                "finished": {"id": "finished", "type": "final"},
            },
            "output": lambda context: {"ok": True},
        }
    )


def interview_machine() -> Machine:
    """The writer asks the editor; the editor's `enough` leaves the writer's state while `ask` is outstanding, and
    the writer's next Turn continues the conversation."""
    enough = define_event(name="enough", input=Empty, description="Stop the questions.")
    return jr2_setup(
        events=[notes.ask, notes.done, notes.reply, enough],
        actors={
            "writer": agent(model="anthropic/claude-haiku-5-5", instructions="You write release notes."),
        },
    ).create_machine(
        {
            "id": "interview",
            "initial": "writing",
            "states": {
                "writing": {
                    "invoke": {"src": "writer", "input": {"prompt": "Draft the notes.", "continue": True}},
                    "initial": "drafting",
                    "states": {
                        "drafting": {"on": {"ask": "asking"}},
                        "asking": {
                            "invoke": {"src": "gate", "id": "editor"},
                            "on": {
                                "reply": "drafting",
                                "enough": {
                                    "target": "#editing",
                                    "actions": answer(lambda: "The editor stopped the questions."),
                                },
                            },
                        },
                    },
                },
                "editing": {
                    "id": "editing",
                    "invoke": {"src": "writer", "input": {"prompt": "Finish the notes.", "continue": True}},
                    "on": {"done": "published"},
                },
                "published": {"type": "final"},
            },
            "output": lambda context: {"ok": True},
        }
    )


def unlock_machine() -> Machine:
    """The desk above the worker's state unlocks `finish` (a guard on the context) while the worker is asked."""
    draft = define_event(name="draft", input=Note, description="Write a draft; it stays with you.")
    unlock = define_event(name="unlock", input=Empty, description="Let the worker finish.")
    return jr2_setup(
        events=[draft, hop, unlock],
        actors={
            "worker": agent(model="anthropic/claude-haiku-5-5", instructions="You work."),
        },
    ).create_machine(
        {
            "id": "unlock",
            "initial": "review",
            "context": {"unlocked": False},
            "states": {
                "review": {
                    "invoke": {"src": "gate", "id": "desk"},
                    "on": {"unlock": {"actions": assign(unlocked=True)}},
                    "initial": "working",
                    "states": {
                        "working": {
                            "invoke": {"src": "worker", "input": {"prompt": "Draft, then finish when allowed."}},
                            "on": {
                                "draft": {"actions": answer(lambda event: "Drafted: " + event.note)},
                                "hop": {"guard": lambda context: context["unlocked"], "target": "#over"},
                            },
                        }
                    },
                },
                "over": {"id": "over", "type": "final"},
            },
            "output": lambda context: {"ok": True},
        }
    )


def solo_machine() -> Machine:
    """An Anthropic Agent with no scripted stand-in."""
    return jr2_setup(
        events=[hop],
        actors={
            "soloist": agent(model="anthropic/claude-haiku-5-5", instructions="You play alone."),
            "fail": fail(),
        },
    ).create_machine(
        {
            "id": "solo",
            "initial": "playing",
            "on": {"agent.fault": ".failed"},
            "states": {
                "playing": {"invoke": {"src": "soloist", "input": {"prompt": "Play."}}, "on": {"hop": "over"}},
                "over": {"type": "final"},
                "failed": {"invoke": {"src": "fail", "input": lambda event: {"reason": event.get("reason")}}},
            },
        }
    )


# -- a whole notes run over each provider -----------------------------------------------------------------------


def test_a_notes_run_over_anthropic_asks_the_editor_and_publishes(server: ModelServer) -> None:
    server.queue(
        tool_call(
            "ask", {"question": "Who reads these notes?"}, usage={"input": 1200, "output": 40, "cache_write": 1100}
        ),
        tool_call(
            "done",
            {"notes": "## What's new\n- Faster start-up."},
            usage={"input": 90, "output": 60, "cache_read": 1100},
        ),
    )

    async def body(host: Host) -> None:
        run_id = await host.start_run("notes", DOOR)
        run = await until(host, status(run_id, "waiting"))
        assert [g["id"] for g in run.view["gates"]] == ["writing.asking"]
        assert run.view["gates"][0]["meta"] == {"question": "Who reads these notes?"}
        delivery = await host.deliver(
            run_id, "gate", gate="writing.asking", event="reply", params={"text": "Admins of small teams."}
        )
        assert delivery.outcome == "delivered"
        run = await until(host, status(run_id, "done", "failed"))
        assert run.status == "done", run.reason
        assert run.output == {"notes": "## What's new\n- Faster start-up."}
        found = await host.db(records, run_id)

        requests = server.requests
        assert len(requests) == 2 and {r.path for r in requests} == {"/v1/messages"}
        assert {api_key(r) for r in requests} == {KEY}
        assert len(tools_hashes(requests)) == 1
        for request in requests:
            body = request.body
            assert body["model"] == "claude-haiku-5-5"
            assert [t["name"] for t in body["tools"]] == ["ask", "done"]
            assert body["tools"][-1]["cache_control"] == CACHE
            assert all("cache_control" not in t for t in body["tools"][:-1])
            assert body["system"] == [
                {
                    "type": "text",
                    "cache_control": CACHE,
                    "text": notes.machine.agents["writer"].instructions + "\n\n" + BRIEFING,
                }
            ]
        first = conversation(requests[0])
        assert len(first) == 1 and first[0]["role"] == "user"
        assert first[0]["texts"][-1].startswith("Write the release notes for these changes:\nFaster start-up.")
        assert first[0]["texts"][-1].endswith("\n\nAllowed picks now: ask.")
        [(call_id, content, is_error)] = conversation(requests[1])[-1]["results"]
        assert conversation(requests[1])[-2]["uses"] == [(call_id, "ask")]
        assert content == "The editor replied: Admins of small teams.\n\nAllowed picks now: ask, done."
        assert not is_error
        assert_one_conversation(requests, found["calls"])
        for request in requests:  # the moving breakpoint: on the last block of the conversation, and only there
            marks = [b for m in request.body["messages"] for b in m["content"] if "cache_control" in b]
            assert marks == [request.body["messages"][-1]["content"][-1]] and marks[0]["cache_control"] == CACHE

        assert kinds(found["journal"]) == ["start", "pick", "gate", "pick"]
        [turn] = found["turns"]
        assert (turn.model, turn.declared_model, turn.scripted, turn.status) == (
            "anthropic/claude-haiku-5-5",
            "anthropic/claude-haiku-5-5",
            False,
            "ended",
        )
        assert (turn.input_tokens, turn.output_tokens, turn.cache_read_tokens, turn.cache_write_tokens) == (
            1290,
            100,
            1100,
            1100,
        )
        calls = found["calls"]
        assert [(c.status, c.stop_reason, c.scripted, c.messages) for c in calls] == [
            ("done", "tool_use", False, 1),
            ("done", "tool_use", False, 3),
        ]
        assert [(c.input_tokens, c.cache_write_tokens, c.cache_read_tokens) for c in calls] == [
            (1200, 1100, 0),
            (90, 0, 1100),
        ]
        assert all(c.latency_ms is not None and c.latency_ms > 0 for c in calls)
        assert len({c.request["tools_sha256"] for c in calls}) == 1
        assert [c.tool_calls[0]["name"] for c in calls] == ["ask", "done"]
        assert [m.kind for m in found["messages"]] == ["prompt", "reply", "tool_result", "reply", "tool_result"]
        assert found["run"].scripted is False

    hosted({"notes": notes.machine}, body)


def test_a_notes_run_over_the_local_provider_asks_the_editor_and_publishes(server: ModelServer) -> None:
    server.queue(
        tool_call("ask", {"question": "Who reads these notes?"}, usage={"input": 700, "output": 30}),
        tool_call("done", {"notes": "Notes."}, usage={"input": 80, "output": 20, "cache_read": 640}),
    )

    async def body(host: Host) -> None:
        run_id = await host.start_run("notes_local", DOOR)
        await until(host, status(run_id, "waiting"))
        await host.deliver(run_id, "gate", gate="writing.asking", event="reply", params={"text": "Everyone."})
        run = await until(host, status(run_id, "done", "failed"))
        assert run.status == "done", run.reason
        found = await host.db(records, run_id)

        requests = server.requests
        assert len(requests) == 2 and {r.path for r in requests} == {"/v1/chat/completions"}
        assert len(tools_hashes(requests)) == 1
        for request in requests:
            body = request.body
            assert body["model"] == "qwen3-8b" and body["tool_choice"] == "auto"
            assert [t["function"]["name"] for t in body["tools"]] == ["ask", "done"]
            assert "cache_control" not in request.raw.decode()
            assert body["messages"][0]["role"] == "system"
            assert body["messages"][0]["content"].endswith(BRIEFING)
        assert requests[0].body["messages"][1]["content"].endswith("\n\nAllowed picks now: ask.")
        assistant, tool = requests[1].body["messages"][2:4]
        [call] = assistant["tool_calls"]
        assert call["function"]["name"] == "ask"
        assert json.loads(call["function"]["arguments"]) == {"question": "Who reads these notes?"}
        assert tool == {
            "role": "tool",
            "tool_call_id": call["id"],
            "content": "The editor replied: Everyone.\n\nAllowed picks now: ask, done.",
        }
        assert_one_conversation(requests, found["calls"])

        assert kinds(found["journal"]) == ["start", "pick", "gate", "pick"]
        [turn] = found["turns"]
        assert (turn.model, turn.scripted, turn.status) == ("local/qwen3-8b", False, "ended")
        assert (turn.input_tokens, turn.output_tokens, turn.cache_read_tokens) == (780, 50, 640)
        assert [(c.status, c.stop_reason) for c in found["calls"]] == [("done", "tool_use")] * 2
        assert [m.kind for m in found["messages"]] == ["prompt", "reply", "tool_result", "reply", "tool_result"]

    hosted({"notes_local": local_notes()}, body)


# -- malformed tool calls ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["anthropic", "local"])
def test_malformed_tool_calls_are_refused_back_to_the_model_and_change_nothing(
    server: ModelServer, provider: str
) -> None:
    server.queue(
        tool_call("publish", {"notes": "Out."}),  # not on the Menu
        tool_call("ask", raw='{"question": "Who reads'),  # arguments that are not JSON
        tool_call("ask", {"topic": "readers"}),  # JSON that fails the event's schema
        tool_call("ask", {"question": "Who reads these notes?"}),
        tool_call("done", {"notes": "Notes."}),
    )
    workflow, workflows = machines(provider)

    async def body(host: Host) -> None:
        run_id = await host.start_run(workflow, DOOR)
        run = await until(host, status(run_id, "waiting"))
        assert run.view["gates"][0]["id"] == "writing.asking"
        found = await host.db(records, run_id)
        assert kinds(found["journal"]) == ["start", "pick"] and run.seq == len(found["journal"])
        assert found["journal"][-1]["params"] == {"question": "Who reads these notes?"}

        requests = server.requests
        assert len(requests) == 4 and len(tools_hashes(requests)) == 1
        refusals = [conversation(r)[-1]["results"] for r in requests[1:]]
        assert [len(r) for r in refusals] == [1, 1, 1]
        assert all(is_error for [(_, _, is_error)] in refusals)
        assert all(content.endswith("\n\nAllowed picks now: ask.") for [(_, content, _)] in refusals)
        unknown, not_json, invalid = (content for [(_, content, _)] in refusals)
        assert unknown.startswith('"publish" is not one of your tools (your tools: ask, done); nothing was delivered.')
        assert 'the arguments of "ask" are not a JSON object' in not_json
        assert 'the input of "ask" is not valid' in invalid and "question" in invalid
        assert "Field required" in invalid
        assert_one_conversation(requests, found["calls"])
        assert [m.kind for m in found["messages"]] == [
            "prompt",
            "reply",
            "refusal",
            "reply",
            "refusal",
            "reply",
            "tool_result",
            "reply",
        ]
        assert found["messages"][6].content[0]["is_error"] is True

        await host.deliver(run_id, "gate", gate="writing.asking", event="reply", params={"text": "Everyone."})
        run = await until(host, status(run_id, "done", "failed"))
        assert run.status == "done", run.reason
        assert kinds((await host.db(records, run_id))["journal"]) == ["start", "pick", "gate", "pick"]

    hosted(workflows, body)


# -- provider failures ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["anthropic", "local"])
def test_a_persistent_429_faults_the_turn_and_the_machine_fails_the_run(server: ModelServer, provider: str) -> None:
    server.always(error(429, "Slow down: 50 requests per minute at most."))
    workflow, workflows = machines(provider)

    async def body(host: Host) -> None:
        run_id = await host.start_run(workflow, DOOR)
        run = await until(host, status(run_id, "done", "failed"))
        assert run.status == "failed"
        assert server.count() == 2  # the SDK's one retry (JR2_PROVIDER_MAX_RETRIES = 1), then the Turn faults
        found = await host.db(records, run_id)
        [turn] = found["turns"]
        assert turn.status == "faulted"
        assert turn.reason.startswith("provider limit: 429 Slow down: 50 requests per minute at most.")
        assert kinds(found["journal"]) == ["start", "fault"]
        assert (found["journal"][-1]["agent"], found["journal"][-1]["reason"]) == ("writer", turn.reason)
        # agent.fault took the Machine to its `failed` state, whose `fail` ended the run with the provider's words.
        assert found["run"].view["value"] == "failed"
        assert run.reason.endswith("could not go on: " + turn.reason)
        [call] = found["calls"]
        assert call.status == "failed" and call.error.startswith("provider limit: 429")
        assert call.latency_ms is not None

    hosted(workflows, body)


def test_without_a_key_or_a_stand_in_the_run_fails_saying_the_key_is_not_set(
    server: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")

    async def body(host: Host) -> None:
        run_id = await host.start_run("solo", None)
        run = await until(host, status(run_id, "done", "failed"))
        assert run.status == "failed" and "ANTHROPIC_API_KEY is not set" in run.reason
        assert server.count() == 0
        found = await host.db(records, run_id)
        [turn] = found["turns"]
        assert (turn.model, turn.scripted, turn.status) == ("anthropic/claude-haiku-5-5", False, "faulted")
        assert "ANTHROPIC_API_KEY is not set" in turn.reason
        [call] = found["calls"]
        assert call.status == "failed" and "ANTHROPIC_API_KEY is not set" in call.error

    hosted({"solo": solo_machine()}, body)


def test_without_a_key_the_scripted_stand_in_plays_and_the_records_say_so(
    server: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")

    async def body(host: Host) -> None:
        run_id = await host.start_run("notes", DOOR)
        run = await until(host, status(run_id, "waiting", "failed"))
        assert run.status == "waiting", run.reason
        assert run.view["gates"][0]["meta"] == {"question": "Who reads these notes, and what should they know first?"}
        assert run.view["turns"][0]["scripted"] is True
        await host.deliver(run_id, "gate", gate="writing.asking", event="reply", params={"text": "Everyone."})
        run = await until(host, status(run_id, "done", "failed"))
        assert run.status == "done" and run.scripted
        found = await host.db(records, run_id)
        [turn] = found["turns"]
        assert (turn.model, turn.declared_model, turn.scripted) == (
            "script/notes.writer",
            "anthropic/claude-haiku-5-5",
            True,
        )
        assert all(c.scripted and c.model == "script/notes.writer" for c in found["calls"])
        assert server.count() == 0

    hosted({"notes": notes.machine}, body)


# -- re-prompts and rerolls (engine/core/turn_policy.py) -------------------------------------------------------------


@pytest.mark.parametrize("provider", ["anthropic", "local"])
def test_a_reply_without_a_pick_is_reprompted_twice_then_the_turn_faults(server: ModelServer, provider: str) -> None:
    policy = TurnPolicy()
    server.queue(*[text(f"Let me think ({n}).") for n in range(policy.max_reprompts + 1)])
    workflow, workflows = machines(provider)

    async def body(host: Host) -> None:
        run_id = await host.start_run(workflow, DOOR)
        run = await until(host, status(run_id, "done", "failed"))
        assert run.status == "failed"
        assert f"the Agent ended its reply without a pick {policy.max_reprompts + 1} times" in run.reason
        requests = server.requests
        assert len(requests) == policy.max_reprompts + 1
        reprompt = reprompt_message(["ask"])
        for n, request in enumerate(requests):
            said = conversation(request)
            assert [t for m in said for t in m["texts"] if t == reprompt] == [reprompt] * n
            assert [t for m in said if m["role"] == "assistant" for t in m["texts"]] == [
                f"Let me think ({i})." for i in range(n)
            ]
        assert last_words(requests[-1]) == reprompt
        assert len(tools_hashes(requests)) == 1
        found = await host.db(records, run_id)
        assert_one_conversation(requests, found["calls"])
        assert kinds(found["journal"]) == ["start", "fault"]
        assert [m.kind for m in found["messages"]] == ["prompt", "reply", "reprompt", "reply", "reprompt", "reply"]
        assert [c.stop_reason for c in found["calls"]] == ["end_turn"] * 3
        assert found["turns"][0].status == "faulted"

    hosted(workflows, body)


def test_a_reply_without_a_pick_that_picks_after_the_reprompt_goes_on(server: ModelServer) -> None:
    server.queue(text("Hmm."), tool_call("ask", {"question": "Who reads these notes?"}))

    async def body(host: Host) -> None:
        run_id = await host.start_run("notes", DOOR)
        run = await until(host, status(run_id, "waiting", "failed"))
        assert run.status == "waiting", run.reason
        assert last_words(server.requests[1]) == reprompt_message(["ask"])
        found = await host.db(records, run_id)
        assert kinds(found["journal"]) == ["start", "pick"]
        assert_one_conversation(server.requests, found["calls"])

    hosted({"notes": notes.machine}, body)


def test_a_runaway_turn_is_rerolled_once_on_a_fresh_conversation_then_faults(server: ModelServer) -> None:
    policy = TurnPolicy()
    same = tool_call("done", {"notes": "Too early."})  # on the Menu, not allowed yet: it moves nothing
    server.queue(*[same] * (2 * policy.max_repeats))

    async def body(host: Host) -> None:
        run_id = await host.start_run("notes", DOOR)
        run = await until(host, status(run_id, "done", "failed"))
        assert run.status == "failed"
        assert "runaway Turn after a reroll: the same call" in run.reason
        requests = server.requests
        assert len(requests) == 2 * policy.max_repeats and len(tools_hashes(requests)) == 1
        found = await host.db(records, run_id)
        # The repeated call is delivered (unmoved) until its last repeat, which is refused: each time.
        assert kinds(found["journal"]) == ["start"] + ["pick"] * (2 * (policy.max_repeats - 1)) + ["fault"]
        assert {e["outcome"] for e in found["journal"] if e["kind"] == "pick"} == {"unmoved"}
        first, again = requests[: policy.max_repeats], requests[policy.max_repeats :]
        assert_one_conversation(first, found["calls"][: policy.max_repeats])
        assert_one_conversation(again, found["calls"][policy.max_repeats :])
        [fresh] = conversation(again[0])
        assert fresh["role"] == "user" and not fresh["results"]
        assert fresh["texts"][-1].startswith(
            '(runaway Turn: the same call ("done" with the same input) 3 times in a '
            "row: starting again)\n\nWrite the release notes"
        )
        assert fresh["texts"][-1].endswith("Allowed picks now: ask.")
        for request in first[1:] + again[1:]:
            [(_, content, is_error)] = conversation(request)[-1]["results"]
            assert not is_error and content.startswith('"done" is on the Menu but not allowed now; nothing moved')
        [turn] = found["turns"]
        assert turn.status == "faulted" and turn.reason.startswith("runaway Turn after a reroll")
        assert turn.conversation.endswith("~reroll")
        by_conversation: dict[str, list[str]] = {}
        for message in found["messages"]:
            by_conversation.setdefault(message.conversation, []).append(message.kind)
        assert (
            list(by_conversation.values())
            == [["prompt", "reply", "tool_result", "reply", "tool_result", "reply", "refusal"]] * 2
        )
        assert list(by_conversation)[1] == turn.conversation

    hosted({"notes": notes.machine}, body)


# -- conversations that continue ---------------------------------------------------------------------------------


def test_turns_that_continue_share_one_conversation_and_read_the_notice(server: ModelServer) -> None:
    server.queue(*[tool_call("hop", {"note": f"step {n} is done"}) for n in (1, 2, 3, 4)])

    async def body(host: Host) -> None:
        run_id = await host.start_run("relay", None)
        run = await until(host, status(run_id, "done", "failed"))
        assert run.status == "done", run.reason
        found = await host.db(records, run_id)
        requests = server.requests
        assert [r.api for r in requests] == ["anthropic", "anthropic", "openai", "openai"]
        talker, walker = requests[:2], requests[2:]
        assert len(tools_hashes(talker)) == 1 and len(tools_hashes(walker)) == 1

        # talker's second Turn: its first request carries the first Turn's messages, the pick's tool result,
        # then the notice and the new prompt.
        assert_one_conversation(talker, found["calls"][:2])
        said = conversation(talker[1])
        assert said[0]["texts"] == ["Step one.\n\nAllowed picks now: hop."]
        assert said[1]["uses"][0][1] == "hop"
        assert said[2]["results"][0][1].startswith("You noted: step 1 is done")
        assert said[2]["texts"] == [
            "Notice from your earlier work: You noted: step 1 is done\n\nStep two.\n\nAllowed picks now: hop."
        ]
        # walker does not continue: each Turn starts fresh, and no notice is read.
        for request, prompt in zip(walker, ("Step three.", "Step four.")):
            assert [m["role"] for m in request.body["messages"]] == ["system", "user"]
            assert request.body["messages"][1]["content"] == f"{prompt}\n\nAllowed picks now: hop."

        turns = found["turns"]
        assert [t.agent for t in turns] == ["talker", "talker", "walker", "walker"]
        assert turns[0].conversation == turns[1].conversation
        assert len({turns[1].conversation, turns[2].conversation, turns[3].conversation}) == 3
        assert [c.messages for c in found["calls"]] == [1, 4, 1, 1]  # prompt, reply, tool result, prompt

    hosted({"relay": relay_machine()}, body)


# -- a Turn that ends while its model is asked ------------------------------------------------------------------


def test_a_model_call_whose_turn_ends_meanwhile_is_abandoned_and_the_run_goes_on(server: ModelServer) -> None:
    slow = 3.0
    server.queue(tool_call("hop", {"note": "late"}, delay=slow), tool_call("hop", {"note": "wrapped up"}))

    async def body(host: Host) -> None:
        run_id = await host.start_run("desk", None)
        await requests_made(server, 1)
        await until(host, lambda: ModelCall.objects.filter(run_id=run_id, status="in_flight").exists())
        started = time.monotonic()
        delivery = await host.deliver(run_id, "gate", gate="desk", event="stop", params={})
        assert delivery.outcome == "delivered"
        run = await until(host, status(run_id, "done", "failed"))
        assert run.status == "done", run.reason
        assert time.monotonic() - started < slow  # nobody waited for the slow reply
        await until(host, lambda: ModelCall.objects.filter(run_id=run_id, status="interrupted").exists())
        found = await host.db(records, run_id)
        assert kinds(found["journal"]) == ["start", "gate", "pick"]
        assert found["journal"][-1]["params"] == {"note": "wrapped up"}
        first, second = found["turns"]
        assert (first.state, first.status, second.status) == ("desk.review.working", "ended", "ended")
        assert [c.status for c in found["calls"]] == ["interrupted", "done"]
        abandoned = found["calls"][0]
        assert abandoned.error == "the Turn ended while the model was asked"
        assert abandoned.latency_ms is not None and abandoned.latency_ms < slow * 1000
        assert abandoned.turn_id == first.id and abandoned.response is None
        assert [m.kind for m in found["messages"] if m.turn_id == first.id] == ["prompt"]

    hosted({"desk": desk_machine()}, body)


# -- what a conversation holds across Turns, and while the model is asked ----------------------------------------


def test_a_reply_of_two_calls_whose_first_ends_the_turn_leaves_no_call_for_the_next_turn(server: ModelServer) -> None:
    both = Reply(calls=(ToolUse("hop", {"note": "first"}), ToolUse("hop", {"note": "second"})))
    server.queue(both, *[tool_call("hop", {"note": f"step {n}"}) for n in (2, 3, 4)])

    async def body(host: Host) -> None:
        run_id = await host.start_run("relay", None)
        run = await until(host, status(run_id, "done", "failed"))
        assert run.status == "done", run.reason
        found = await host.db(records, run_id)
        # The second call of the first reply belonged to a Turn that had ended: it is never a pick.
        assert [e["params"]["note"] for e in found["journal"] if e["kind"] == "pick"] == [
            "first",
            "step 2",
            "step 3",
            "step 4",
        ]
        assert server.count() == 4
        assert_one_conversation(server.requests[:2], found["calls"][:2])
        [(first, _), (second, _)] = conversation(server.requests[1])[1]["uses"]
        results = conversation(server.requests[1])[2]["results"]
        assert [(r[0], r[2]) for r in results] == [(first, False), (second, True)]
        assert results[0][1].startswith("You noted: first") and results[1][1] == UNANSWERED

    hosted({"relay": relay_machine()}, body)


def test_a_pick_outstanding_when_a_gate_ends_the_turn_is_not_picked_again_by_the_next_turn(server: ModelServer) -> None:
    server.queue(tool_call("ask", {"question": "Who reads these notes?"}), tool_call("done", {"notes": "Notes."}))

    async def body(host: Host) -> None:
        run_id = await host.start_run("interview", None)
        await until(host, status(run_id, "waiting"))
        delivery = await host.deliver(run_id, "gate", gate="editor", event="enough", params={})
        assert delivery.outcome == "delivered"
        run = await until(host, status(run_id, "done", "failed"))
        assert run.status == "done", run.reason
        found = await host.db(records, run_id)
        assert kinds(found["journal"]) == ["start", "pick", "gate", "pick"]
        assert [e["event"] for e in found["journal"] if e["kind"] == "pick"] == ["ask", "done"]
        requests = server.requests
        assert len(requests) == 2
        assert_one_conversation(requests, found["calls"])
        said = conversation(requests[1])
        assert said[-1]["results"] == [(said[-2]["uses"][0][0], UNANSWERED, True)]
        assert said[-1]["texts"][-1].startswith("Notice from your earlier work: The editor stopped the questions.")
        assert [m.kind for m in found["messages"]] == [
            "prompt",
            "reply",
            "tool_result",
            "prompt",
            "reply",
            "tool_result",
        ]

    hosted({"interview": interview_machine()}, body)


def test_the_next_turn_that_continues_reads_the_conversation_a_reroll_started(server: ModelServer) -> None:
    repeats = TurnPolicy().max_repeats
    server.queue(
        *[tool_call("done", {"notes": "Too early."})] * repeats,  # not allowed while writing: a runaway
        tool_call("ask", {"question": "Who reads these notes?"}),
        tool_call("done", {"notes": "Notes."}),
    )

    async def body(host: Host) -> None:
        run_id = await host.start_run("interview", None)
        await until(host, status(run_id, "waiting"))
        await host.deliver(run_id, "gate", gate="editor", event="enough", params={})
        run = await until(host, status(run_id, "done", "failed"))
        assert run.status == "done", run.reason
        found = await host.db(records, run_id)
        requests = server.requests
        assert len(requests) == repeats + 2
        rerolled, continued = requests[repeats], requests[repeats + 1]
        assert conversation(rerolled)[0]["texts"][0].startswith("(runaway Turn:")
        assert_one_conversation([rerolled, continued], found["calls"][repeats:])
        first, second = found["turns"]
        assert second.conversation == first.conversation and first.conversation.endswith("~reroll")

    hosted({"interview": interview_machine()}, body)


def test_allowed_picks_that_change_while_the_model_is_asked_are_read_after_its_reply(server: ModelServer) -> None:
    server.queue(tool_call("draft", {"note": "v1"}, delay=0.5), tool_call("hop", {"note": "finished"}))

    async def body(host: Host) -> None:
        run_id = await host.start_run("unlock", None)
        await requests_made(server, 1)
        assert (await host.deliver(run_id, "gate", gate="desk", event="unlock", params={})).outcome == "delivered"
        run = await until(host, status(run_id, "done", "failed"))
        assert run.status == "done", run.reason
        found = await host.db(records, run_id)
        requests = server.requests
        assert len(requests) == 2
        assert last_words(requests[0]) == "Draft, then finish when allowed.\n\nAllowed picks now: draft."
        # The conversation stays as the model was sent it (no message slipped in before its reply), and the
        # answer to its pick, written after the change, is what gives it the new Allowed picks.
        assert_one_conversation(requests, found["calls"])
        said = conversation(requests[1])
        assert said[-1]["results"][0][1] == "Drafted: v1\n\nAllowed picks now: draft, hop."
        assert said[-1]["texts"] == []
        assert [m.kind for m in found["messages"]] == ["prompt", "reply", "tool_result", "reply", "tool_result"]

    hosted({"unlock": unlock_machine()}, body)


def test_a_call_made_while_an_earlier_call_of_the_same_reply_was_outstanding_is_refused(server: ModelServer) -> None:
    both = Reply(calls=(ToolUse("ask", {"question": "Who reads these?"}), ToolUse("done", {"notes": "early"})))
    server.queue(both, tool_call("done", {"notes": "late"}))

    async def body(host: Host) -> None:
        run_id = await host.start_run("notes", DOOR)
        await until(host, status(run_id, "waiting"))
        await host.deliver(run_id, "gate", gate="writing.asking", event="reply", params={"text": "Admins."})
        run = await until(host, status(run_id, "done", "failed"))
        assert run.status == "done" and run.output == {"notes": "late"}
        found = await host.db(records, run_id)
        assert [e["event"] for e in found["journal"] if e["kind"] == "pick"] == ["ask", "done"]
        [(asked, _), (early, _)] = conversation(server.requests[1])[1]["uses"]
        results = dict((r[0], (r[1], r[2])) for r in conversation(server.requests[1])[2]["results"])
        assert results[asked][0].startswith("The editor replied: Admins.") and not results[asked][1]
        assert results[early][1] and 'while "ask" was outstanding' in results[early][0]
        assert results[early][0].endswith("Allowed picks now: ask, done.")

    hosted({"notes": notes.machine}, body)
