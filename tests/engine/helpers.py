"""What the tests of the run core share: events and Machines made inline, a started Session, and reading what it
tells the world."""

import copy

from pydantic import create_model

from engine import Session, agent, define_event, jr2_setup


def event(name, audience=None, description=None, **fields):
    """An event whose input has `fields` (each a type, all required)."""
    model = create_model(
        f"{name.title().replace('_', '').replace('-', '')}Input", **{key: (kind, ...) for key, kind in fields.items()}
    )
    return define_event(name=name, input=model, description=description or f"Send {name}.", audience=audience)


def writer():
    return agent(model="script/writer", instructions="You write.")


def build(events, config, **actors):
    """A Machine of `config` with the `writer` Agent and `actors`."""
    return jr2_setup(events=events, actors={"writer": writer(), **actors}).create_machine(config)


def started(machine, input=None):
    """A Session of `machine`, its first outputs drained."""
    session = Session(machine, input)
    session.drain()
    return session


def of(outputs, kind):
    """The outputs of one kind, in order."""
    return [o for o in outputs if isinstance(o, kind)]


def frozen(session):
    """What must not change when nothing is delivered."""
    return copy.deepcopy(session.snapshot), len(session.journal)
