"""A release: a release manager Agent prepares it, a child Machine writes its changelog, a human approves it.

Shows a child Machine with its own Agents ("Compose Machines" in the docs):
- `changelog` is a Machine of its own: its own events (`submit`, `accept`, `revise`), its own two Agents (a drafter
  and a checker that sends the draft back once) and its own door. The parent lists it as an actor slot, like an
  Agent or an Effect, and the state `writing` invokes it.
- The manager's `write_changelog` pick enters `writing`, so the pick is outstanding while the child runs. The child's
  Agents are named `changelog/drafter` and `changelog/checker` in the run. When the child reaches its final state,
  its output is the invoke's done event: `onDone` stores it, and its `answer` is what the manager reads back.
- If the child fails (one of its Agents cannot go on), the error is not a reply: `answer` on `onError` tells the
  manager.
- The guard on `propose` keeps it out of the Allowed picks until there is a changelog entry. `propose` leaves the
  manager's state: the Gate `approval` decides. `reject` sends the release back to a new Turn of the manager, whose
  prompt carries the reason.

The manager has a scripted stand-in, used when no API key is set. The child's Agents play scripted models
(`script/changelog.drafter`, `script/changelog.checker`): jr2 gives offline stand-ins only to a Workflow's own
Agents, so a child Machine's Agents that must run with no key name a `script/` model. Put `anthropic/...` there to
give them a real one.
"""

from pydantic import BaseModel, Field

from engine import agent, answer, assign, define_event, fail, jr2_setup, scripted

# -- the child Machine: a changelog entry, drafted and checked -------------------------------------------------


class ChangelogDoor(BaseModel):
    version: str = Field(description="The version being released.")
    changes: str = Field(description="The changes in this release, one on each line.")
    audience: str = Field(description="Who reads the changelog.")


class SubmitInput(BaseModel):
    entry: str = Field(description="The changelog entry, in Markdown.")


class AcceptInput(BaseModel):
    pass


class ReviseInput(BaseModel):
    notes: str = Field(description="What the drafter must change, one point on each line.")


submit = define_event(
    name="submit", input=SubmitInput, description="Hand the changelog entry to the checker. Then stop."
)
accept = define_event(name="accept", input=AcceptInput, description="Accept the entry as it is. Then stop.")
revise = define_event(
    name="revise", input=ReviseInput, description="Send the entry back to the drafter with your notes. Then stop."
)


def _drafting_prompt(context):
    """The drafter's prompt: the changes, and the checker's notes after a revision."""
    prompt = (
        f"Write the changelog entry of version {context['version']} for {context['audience']}. "
        f"The changes:\n{context['changes']}"
    )
    if context["notes"]:
        prompt += "\nThe checker asked for changes:\n" + context["notes"]
    return prompt


changelog = jr2_setup(
    events=[submit, accept, revise],
    actors={
        "drafter": agent(
            model="script/changelog.drafter",
            instructions="You write changelog entries: one line per change, plain words.",
            workspace="none",
        ),
        "checker": agent(
            model="script/changelog.checker",
            instructions="You check changelog entries against the changes. Accept a good entry; "
            "send back one that misses a change or is hard to read.",
            workspace="none",
        ),
        "fail": fail(),
    },
).create_machine(
    {
        "id": "changelog",
        "input": ChangelogDoor,
        "context": lambda input: {
            "version": input.version,
            "changes": input.changes,
            "audience": input.audience,
            "entry": "",
            "notes": "",
            "rounds": 0,
        },
        "on": {"agent.fault": ".stuck"},
        "initial": "drafting",
        "states": {
            "drafting": {
                "invoke": {"src": "drafter", "input": lambda context: {"prompt": _drafting_prompt(context)}},
                "on": {"submit": {"target": "checking", "actions": assign(entry=lambda event: event.entry)}},
            },
            "checking": {
                "invoke": {
                    "src": "checker",
                    "input": lambda context: {
                        "prompt": f"Check this entry (round {context['rounds'] + 1}).\n"
                        f"The changes:\n{context['changes']}\nThe entry:\n{context['entry']}"
                    },
                },
                "on": {
                    "accept": "written",
                    "revise": {
                        "target": "drafting",
                        "actions": assign(
                            notes=lambda event: event.notes, rounds=lambda context: context["rounds"] + 1
                        ),
                    },
                },
            },
            "written": {"type": "final"},
            "stuck": {
                "invoke": {
                    "src": "fail",
                    "input": lambda event: {
                        "reason": "a changelog Agent's Turn could not go on: "
                        + str(event.get("reason", "no reason given"))
                    },
                }
            },
        },
        "output": lambda context: {"entry": context["entry"], "revisions": context["rounds"]},
    }
)

# -- the parent Machine: the release ---------------------------------------------------------------------------


class Door(BaseModel):
    version: str = Field(description="The version to release, such as 2.4.0.")
    changes: str = Field(description="The changes in this release, one on each line.")


class WriteChangelogInput(BaseModel):
    audience: str = Field(description="Who reads the changelog, such as 'people who upgrade from 2.3'.")


class ProposeInput(BaseModel):
    summary: str = Field(description="The release in one or two sentences, for the approver.")


class ApproveInput(BaseModel):
    pass


class RejectInput(BaseModel):
    reason: str = Field(description="What must change before the release can go out.")


write_changelog = define_event(
    name="write_changelog",
    input=WriteChangelogInput,
    description="Have the changelog written for this release. The finished entry is the answer to this call.",
)
propose = define_event(
    name="propose",
    input=ProposeInput,
    description="Propose the release for approval, once the changelog is written. Then stop.",
)
approve = define_event(name="approve", input=ApproveInput, description="Release it.")
reject = define_event(
    name="reject", input=RejectInput, description="Send the release back to the release manager with a reason."
)


def _preparing_prompt(context):
    """The manager's prompt: the release, and the approver's reason after a rejection."""
    prompt = f"Prepare release {context['version']}. The changes:\n{context['changes']}"
    if context["rejected"]:
        prompt += "\nThe approver sent it back: " + context["rejected"]
    return prompt


machine = jr2_setup(
    events=[write_changelog, propose, approve, reject],
    actors={
        "manager": agent(
            model="anthropic/claude-haiku-5-5",
            instructions="You prepare software releases. Have the changelog written, then propose "
            "the release with a short summary.",
            workspace="none",
        ),
        "changelog": changelog,
        "fail": fail(),
    },
).create_machine(
    {
        "id": "release",
        "input": Door,
        "context": lambda input: {
            "version": input.version,
            "changes": input.changes,
            "audience": "",
            "entry": None,
            "summary": "",
            "rejected": "",
        },
        "on": {"agent.fault": ".failed"},
        "initial": "preparing",
        "states": {
            "preparing": {
                "invoke": {"src": "manager", "input": lambda context: {"prompt": _preparing_prompt(context)}},
                "on": {
                    "propose": {
                        "guard": lambda context: context["entry"] is not None,
                        "target": "approving",
                        "actions": assign(summary=lambda event: event.summary),
                    }
                },
                "initial": "idle",
                "states": {
                    "idle": {
                        "on": {
                            "write_changelog": {
                                "target": "writing",
                                "actions": assign(audience=lambda event: event.audience),
                            }
                        }
                    },
                    "writing": {
                        "invoke": {
                            "id": "changelog",
                            "src": "changelog",
                            "input": lambda context: {
                                "version": context["version"],
                                "changes": context["changes"],
                                "audience": context["audience"],
                            },
                            "onDone": {
                                "target": "idle",
                                "actions": [
                                    assign(entry=lambda event: event.output["entry"]),
                                    answer(
                                        lambda event: (
                                            "The changelog entry (revised "
                                            + str(event.output["revisions"])
                                            + " time(s)):\n"
                                            + event.output["entry"]
                                        )
                                    ),
                                ],
                            },
                            "onError": {
                                "target": "idle",
                                "actions": answer(
                                    lambda event: "The changelog could not be written: " + str(event.error["reason"])
                                ),
                            },
                        },
                    },
                },
            },
            "approving": {
                "invoke": {
                    "src": "gate",
                    "id": "approval",
                    "input": lambda context: {
                        "meta": {
                            "version": context["version"],
                            "summary": context["summary"],
                            "changelog": context["entry"],
                        }
                    },
                },
                "on": {
                    "approve": "released",
                    "reject": {
                        "target": "preparing",
                        "actions": assign(rejected=lambda event: event.reason, entry=None),
                    },
                },
            },
            "released": {"type": "final"},
            "failed": {
                "invoke": {
                    "src": "fail",
                    "input": lambda event: {
                        "reason": "the release manager's Turn could not go on: "
                        + str(event.get("reason", "no reason given"))
                    },
                }
            },
        },
        "output": lambda context: {
            "version": context["version"],
            "changelog": context["entry"],
            "summary": context["summary"],
        },
    }
)

# -- offline: the manager's stand-in and the child's scripted models -------------------------------------------


@scripted("release.manager")
def offline_manager(turn):
    """The offline demo's release manager (a scripted stand-in): have the changelog written, then propose."""
    if not turn.answers and "write_changelog" in turn.allowed_picks:
        return ("write_changelog", {"audience": "people who upgrade"})
    if "propose" in turn.allowed_picks:
        version = turn.prompt.split()[2].rstrip(".")
        return ("propose", {"summary": f"Release {version}: the changelog is written and checked."})
    return None


@scripted("changelog.drafter")
def offline_drafter(turn):
    """The child's drafter: one line per change, each starting with a verb once the checker asked for it."""
    if "submit" not in turn.allowed_picks:
        return None
    lines = turn.prompt.split("The changes:\n", 1)[1].split("\nThe checker asked", 1)[0].splitlines()
    verb = "Changed: " if "The checker asked for changes" in turn.prompt else ""
    return ("submit", {"entry": "\n".join(f"- {verb}{line.strip()}" for line in lines if line.strip())})


@scripted("changelog.checker")
def offline_checker(turn):
    """The child's checker: sends the first draft back once, accepts the second."""
    if "(round 1)" in turn.prompt and "revise" in turn.allowed_picks:
        return ("revise", {"notes": "Start each line with what changed."})
    if "accept" in turn.allowed_picks:
        return ("accept", {})
    return None
