"""The workflow page reads as an engineer expects: the whole Menu, schemas as JSON, states in the glossary's words."""

from __future__ import annotations

import html
import json
import re
from typing import Any

from console.pages.states import invoke_words, menus, state_details
from engine.runtime.workspace.tools import TOOL_NAMES
from tests.console.conftest import logged_in
from workflows import code_review, notes


def schemas(page: str) -> list[Any]:
    return [json.loads(html.unescape(text)) for text in re.findall(r'<pre class="schema">(.*?)</pre>', page, re.S)]


def test_input_schemas_are_formatted_json_one_can_copy(observer: Any) -> None:
    page = logged_in(observer).get("/workflows/notes/").content.decode()
    found = schemas(page)
    expected = [tool["input_schema"] for agent in notes.machine.menus() for tool in notes.machine.menu(agent)]
    assert found == expected and found
    assert "{&#x27;" not in page and "{'properties'" not in page  # no Python dict


def test_an_agent_with_a_workspace_shows_its_tools_apart_from_its_events(observer: Any) -> None:
    page = logged_in(observer).get("/workflows/code_review/").content.decode()
    menu = page[page.index('id="menus"') : page.index('id="states"')]
    for part in menu.split("<h3>")[1:]:
        events, _, tools = part.partition("Workspace tools")
        assert tools, "every Agent of code_review has a workspace"
        assert all(f"<code>{name}</code>" not in events for name in TOOL_NAMES)
        assert all(f"<code>{name}</code>" in tools for name in TOOL_NAMES)
    assert len(schemas(page)) == sum(
        len(code_review.machine.menu(a)) + len(TOOL_NAMES) for a in code_review.machine.menus()
    )


def test_an_agent_without_a_workspace_shows_its_events_only() -> None:
    for menu in menus(notes.machine):
        assert menu["tools"] == [] and menu["workspace"] == ""
        assert [e["name"] for e in menu["events"]] == [t["name"] for t in notes.machine.menu(menu["agent"])]
    for menu in menus(code_review.machine):
        assert [t["name"] for t in menu["tools"]] == list(TOOL_NAMES) and menu["workspace"] == "shared"


def test_what_a_state_invokes_is_said_in_the_glossarys_words(observer: Any) -> None:
    details = {d["path"]: d for d in state_details(code_review.machine)}
    assert details["reviewing"]["invokes"] == ["Agent reviewer"]
    assert details["reviewing.testing"]["invokes"] == ["Effect tests (command)"]
    page = logged_in(observer).get("/workflows/code_review/").content.decode()
    states = page[page.index('id="states"') :]
    assert not re.search(r"\(\d+\.code_review\.", states), "no internal invoke id"
    for node in code_review.machine.nodes:
        for inv in node.invoke:
            assert invoke_words(code_review.machine, inv) in states


def test_an_anonymous_guard_is_its_source_text_in_the_state_details(observer: Any) -> None:
    details = {d["path"]: d for d in state_details(notes.machine)}
    guards = [t["guard"] for t in details["writing.asking"]["transitions"] + details["writing"]["transitions"]]
    assert 'context["replies"] > 0' in guards
    page = logged_in(observer).get("/workflows/notes/").content.decode()
    assert "[context[&quot;replies&quot;] &gt; 0]" in page
