"""`define_event`: what it refuses (SPEC.md 3, the defineEvent seed) and the tool it becomes on a Menu."""

import dataclasses
import json
from dataclasses import dataclass

import pytest
from pydantic import BaseModel, Field

from engine import EventDefError, MachineError, agent, define_event, jr2_setup


class Finding(BaseModel):
    summary: str = Field(description="One line that says what was found.")
    severity: int = Field(default=1, description="1 (low) to 3 (high).")


class Empty(BaseModel):
    pass


def _machine_taking(event, machine_id="findings"):
    """A one-Agent Machine whose Agent's state takes `event` and leaves for a final state."""
    return jr2_setup(
        events=[event],
        actors={"scout": agent(model="script/scout", instructions="Report what you find.")},
    ).create_machine(
        {
            "id": machine_id,
            "initial": "looking",
            "states": {
                "looking": {"invoke": {"src": "scout"}, "on": {event.name: "reported"}},
                "reported": {"type": "final"},
            },
        }
    )


# -- the name -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["report finding", "report.finding", "", "report!", "naïve", "a/b", "tab\there"])
def test_a_name_with_a_character_other_than_letter_digit_underscore_or_dash_is_refused(name):
    with pytest.raises(EventDefError) as err:
        define_event(name=name, input=Finding)
    message = str(err.value)
    assert message.startswith("define_event: invalid name")
    assert f'"{name}"' in message
    assert "/^[a-zA-Z0-9_-]+$/" in message
    assert "tool name" in message and "event type" in message


@pytest.mark.parametrize("name", ["report", "Report_Finding-2", "a", "0", "-_-"])
def test_a_name_of_letters_digits_underscores_and_dashes_is_accepted(name):
    event = define_event(name=name, input=Finding)
    assert event.name == name


def test_a_name_that_is_not_a_string_is_refused():
    with pytest.raises(EventDefError) as err:
        define_event(name=42, input=Finding)
    assert "invalid name" in str(err.value)


# -- the input ------------------------------------------------------------------------------------------------


def test_an_input_with_a_sender_field_is_refused_because_the_engine_writes_it():
    class WithSender(BaseModel):
        text: str
        sender: str

    with pytest.raises(EventDefError) as err:
        define_event(name="reply", input=WithSender)
    message = str(err.value)
    assert '"reply"' in message
    assert "`sender`" in message
    assert "name the payload field something else" in message


def test_an_input_with_a_sender_field_under_an_alias_is_still_refused_by_its_field_name():
    class AliasedSender(BaseModel):
        sender: str = Field(alias="from_whom")

    with pytest.raises(EventDefError) as err:
        define_event(name="reply", input=AliasedSender)
    assert "`sender`" in str(err.value)


def test_an_input_whose_payload_key_is_sender_through_an_alias_is_refused():
    """The payload key an Agent or a Gate's caller writes is the alias; `sender` there would collide too."""

    class SenderByAlias(BaseModel):
        who: str = Field(alias="sender")

    assert "sender" in SenderByAlias.model_json_schema()["properties"]
    with pytest.raises(EventDefError) as err:
        define_event(name="reply", input=SenderByAlias)
    assert "`sender`" in str(err.value)


@dataclass
class NotAModel:
    text: str


@pytest.mark.parametrize(
    "bad_input",
    [
        {"text": str},
        Finding(summary="an instance, not the class"),
        NotAModel,
        None,
        str,
        dict,
    ],
    ids=["dict", "model-instance", "dataclass", "none", "str", "dict-type"],
)
def test_an_input_that_is_not_a_pydantic_model_class_is_refused(bad_input):
    with pytest.raises(EventDefError) as err:
        define_event(name="report", input=bad_input)
    message = str(err.value)
    assert '"report"' in message
    assert "pydantic model class" in message


def test_an_input_with_no_fields_is_accepted_as_an_event_without_payload():
    event = define_event(name="ping", input=Empty)
    assert event.input is Empty
    assert event.json_schema()["properties"] == {}


# -- retired arguments and semantics --------------------------------------------------------------------------


def test_an_output_argument_is_refused_as_retired():
    with pytest.raises(EventDefError) as err:
        define_event(name="report", input=Finding, output=Finding)
    message = str(err.value)
    assert '"report"' in message
    assert "`output`" in message
    assert "retired" in message
    assert "answered when" in message


def test_the_default_semantics_is_ack_and_create_machine_accepts_it():
    event = define_event(name="report", input=Finding)
    assert event.semantics == "ack"
    machine = _machine_taking(event)
    assert machine.menu_names("scout") == ("report",)


@pytest.mark.parametrize("semantics", ["deferred", "fire-and-forget", "ACK"])
def test_semantics_other_than_ack_is_refused_by_create_machine_naming_the_machine_and_event(semantics):
    event = define_event(name="report", input=Finding, semantics=semantics)
    with pytest.raises(MachineError) as err:
        _machine_taking(event, machine_id="findings")
    message = str(err.value)
    assert '"findings"' in message
    assert '"report"' in message
    assert semantics in message
    assert '"ack"' in message
    assert err.value.machine == "findings" and err.value.event == "report"


def test_an_unknown_audience_is_refused():
    with pytest.raises(EventDefError) as err:
        define_event(name="report", input=Finding, audience="everyone")
    assert "everyone" in str(err.value)


# -- what the definition is -----------------------------------------------------------------------------------


def test_an_event_definition_is_frozen():
    event = define_event(name="report", input=Finding, description="Report one finding.")
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.name = "other"


def test_the_tool_schema_is_the_models_json_schema_with_field_descriptions():
    event = define_event(name="report", input=Finding, description="Report one finding.")
    schema = event.json_schema()
    assert schema == Finding.model_json_schema()
    assert schema["properties"]["summary"]["description"] == "One line that says what was found."
    assert schema["properties"]["severity"]["description"] == "1 (low) to 3 (high)."
    assert schema["required"] == ["summary"]


def test_the_tool_on_the_menu_has_the_event_name_description_and_input_schema():
    event = define_event(name="report", input=Finding, description="Report one finding.")
    machine = _machine_taking(event)
    [tool] = machine.menu("scout")
    assert tool["name"] == "report"
    assert tool["description"] == "Report one finding."
    assert tool["input_schema"] == Finding.model_json_schema()
    assert json.loads(machine.menu_json("scout")) == [tool]
