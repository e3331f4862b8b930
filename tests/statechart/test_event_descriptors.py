"""Event descriptor matching, ported from xstate's `eventDescriptors.test.ts`.

Exact descriptors, the `"*"` wildcard and partial `"prefix.*"` descriptors: which one wins, and which
malformed wildcards never match.
"""

import pytest

from engine.core.statechart import create_machine
from tests.statechart.helpers import started


def _start_with(on):
    """A machine whose `start` state has the given `on`, next to `success` (final), `pass` and `fail`."""
    return create_machine(
        {
            "initial": "start",
            "states": {
                "start": {"on": on},
                "success": {"type": "final"},
                "pass": {},
                "fail": {},
            },
        }
    )


def _value_after(on, event_type):
    actor = started(_start_with(on))
    actor.send({"type": event_type})
    return actor.snapshot


class TestDescriptorPriority:
    def test_wildcard_catches_an_event_without_its_own_transition(self):
        machine = create_machine(
            {
                "initial": "A",
                "states": {"A": {"on": {"FOO": "B", "*": "C"}}, "B": {}, "C": {}},
            }
        )
        actor = started(machine)
        actor.send({"type": "BAR"})
        assert actor.snapshot.value == "C"

    def test_exact_descriptor_still_wins_where_both_exist(self):
        machine = create_machine(
            {
                "initial": "A",
                "states": {"A": {"on": {"FOO": "B", "*": "C"}}, "B": {}, "C": {}},
            }
        )
        actor = started(machine)
        actor.send({"type": "FOO"})
        assert actor.snapshot.value == "B"

    def test_exact_descriptor_beats_an_earlier_wildcard(self):
        assert _value_after({"*": "fail", "NEXT": "pass"}, "NEXT").value == "pass"

    def test_exact_descriptor_beats_an_earlier_partial_one(self):
        assert _value_after({"foo.*": "fail", "foo.bar": "pass"}, "foo.bar").value == "pass"

    def test_longer_partial_descriptor_beats_an_earlier_shorter_one(self):
        assert _value_after({"foo.*": "fail", "foo.bar.*": "pass"}, "foo.bar.baz").value == "pass"

    def test_shorter_partial_descriptor_is_used_when_the_longer_one_is_blocked(self):
        on = {"foo.bar.*": {"target": "fail", "guard": lambda: False}, "foo.*": "pass"}
        assert _value_after(on, "foo.bar.baz").value == "pass"

    def test_partial_descriptor_is_used_when_the_exact_one_is_blocked(self):
        on = {"foo.bar": {"guard": lambda: False, "target": "fail"}, "foo.*": "pass"}
        assert _value_after(on, "foo.bar").value == "pass"

    def test_wildcard_is_used_when_the_exact_one_is_blocked(self):
        on = {"NEXT": {"guard": lambda: False, "target": "fail"}, "*": "pass"}
        assert _value_after(on, "NEXT").value == "pass"


class TestPartialDescriptors:
    @pytest.mark.parametrize("event_type", ["event", "eventually"])
    def test_wildcard_glued_to_a_token_never_matches(self, event_type):
        snapshot = _value_after({"event*": "success"}, event_type)
        assert not snapshot.matches("success")
        assert snapshot.matches("start")

    def test_prefix_matches_the_bare_prefix(self):
        assert _value_after({"event.*": "success"}, "event").matches("success")

    def test_prefix_matches_one_more_token(self):
        assert _value_after({"event.*": "success"}, "event.whatever").matches("success")

    @pytest.mark.parametrize("event_type", ["eventually", "eventually.event"])
    def test_prefix_does_not_match_a_longer_first_token(self, event_type):
        assert not _value_after({"event.*": "success"}, event_type).matches("success")

    def test_prefix_matches_several_more_tokens(self):
        assert _value_after({"event.*": "success"}, "event.first.second").matches("success")

    def test_multi_token_prefix_matches_several_more_tokens(self):
        snapshot = _value_after({"event.foo.bar.*": "success"}, "event.foo.bar.first.second")
        assert snapshot.matches("success")

    def test_multi_token_prefix_does_not_match_a_different_middle_token(self):
        assert not _value_after({"event.foo.bar.*": "success"}, "event.foo.baz.first").matches("success")

    @pytest.mark.parametrize("event_type", ["event.foo.bar.first.second", "whatever.event"])
    def test_infix_wildcards_never_match(self, event_type):
        # xstate accepts such a config (it only warns); the descriptors just never match
        snapshot = _value_after({"event.*.bar.*": "success", "*.event.*": "success"}, event_type)
        assert not snapshot.matches("success")
        assert snapshot.status == "active"

    @pytest.mark.parametrize("event_type", ["eventually.bar.baz", "prevent.whatever"])
    def test_wildcards_inside_tokens_never_match(self, event_type):
        snapshot = _value_after({"event*.bar.*": "success", "*event.*": "success"}, event_type)
        assert not snapshot.matches("success")
        assert snapshot.status == "active"

    def test_partial_descriptor_hands_the_whole_event_to_actions(self):
        handled = []
        machine = create_machine(
            {
                "initial": "listening",
                "states": {"listening": {"on": {"FEEDBACK.*": {"actions": "handleEvent"}}}},
            },
            actions={"handleEvent": lambda event: handled.append(dict(event))},
        )
        actor = started(machine)
        actor.send({"type": "FEEDBACK.MESSAGE", "message": "hello"})
        actor.send({"type": "FEEDBACK.RATE", "rate": 5})
        actor.send({"type": "OTHER"})

        assert handled == [
            {"type": "FEEDBACK.MESSAGE", "message": "hello"},
            {"type": "FEEDBACK.RATE", "rate": 5},
        ]

    def test_partial_descriptor_in_a_pure_transition(self):
        machine = _start_with({"event.*": "success"})
        start, _ = machine.initial_transition()
        after, _ = machine.transition(start, {"type": "event.deep.inside"})
        assert after.value == "success"
        assert after.status == "done"
