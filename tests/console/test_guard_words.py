"""A guard in its author's words: named guards with their params, lambdas by their source text, shortened."""

from __future__ import annotations

from typing import Any

from engine.core.guard_words import MAX_TEXT, guard_text, lambda_text
from engine.core.routes import sent_by
from engine.core.statechart.guards import and_, not_, or_, state_in
from workflows import notes


def test_a_named_guard_is_its_name_and_its_params() -> None:
    assert guard_text("ready") == "ready"
    assert guard_text({"type": "ready"}) == "ready"
    assert guard_text({"type": "over", "params": {"n": 2, "who": "desk"}}) == 'over(n=2, who="desk")'
    assert guard_text({"type": "over", "params": lambda context: context["n"]}) == 'over(context["n"])'


def test_combinators_say_what_they_hold() -> None:
    assert guard_text(and_(["a", not_({"type": "b", "params": {"x": [1]}})])) == "and(a, not(b(x=[1])))"
    assert guard_text(or_([sent_by("desk"), state_in("writing")])) == "or(sent_by(desk), in(writing))"


def test_a_lambda_is_its_source_text_as_written() -> None:
    config: dict[str, Any] = {
        "guard": lambda context: context["replies"] > 0,
    }
    assert guard_text(config["guard"]) == 'context["replies"] > 0'
    spread = lambda context, event: context["a"] and event["b"]
    assert guard_text(spread) == 'context["a"] and event["b"]'


def test_a_long_lambda_is_shortened() -> None:
    long = lambda context: context["a_rather_long_key"]["and_another_one"] > context["limit_of_the_run"]
    text = lambda_text(long)
    assert text is not None and len(text) == MAX_TEXT and text.endswith("…")
    assert text.startswith('context["a_rather_long_key"]')


def test_a_lambda_without_source_or_twins_on_its_line_is_guard() -> None:
    assert guard_text(eval("lambda context: True")) == "guard"
    twins = [lambda context: 1, lambda context: 2]
    assert guard_text(twins[0]) == "guard"
    same = [lambda context: 1, lambda context: 1]
    assert guard_text(same[1]) == "1"


def test_the_examples_guards_read_as_written() -> None:
    guards = [guard_text(t.guard) for node in notes.machine.nodes for t in node.all_transitions() if t.guard]
    assert 'context["replies"] > 0' in guards
    assert "guard" not in guards
