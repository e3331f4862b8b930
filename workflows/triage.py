"""Issue triage: a triage Agent and a human at the triage desk (a Gate) label one incoming issue.

Shows `audience` and `sent_by`:
- The desk's Gate is open for the whole of `triaging`, and the triage Agent works below it, in `sorting`. The `label`
  key sits on `triaging`, so it belongs to the desk; `audience="any"` gives it to the Agent too. Both parties may
  send `label`, and the Machine handles it by its Sender: `sent_by("desk")` makes the desk's label final, while the
  Agent's label (the next transition) is only a proposal that the desk then confirms or overrides.
- `withdraw` is a root event with no party above it, so it would be on every Menu; `audience="external"` keeps it
  from the Agent: only the desk can withdraw the issue.
- `find_duplicates` runs an Effect below the Agent's state: the pick is outstanding until the search is done, and
  its result is the answer. If the desk labels the issue first, `triaging` is left, the search stops and the Agent
  is told its pick did not finish.
"""

import json
import os
from typing import Literal

from pydantic import BaseModel, Field

from engine import agent, answer, assign, define_event, effect, fail, from_pick, jr2_setup, scripted, sent_by

Label = Literal["bug", "feature", "question"]


class LabelInput(BaseModel):
    label: Label = Field(description="The kind of issue: bug, feature or question.")
    reason: str = Field(description="Why this label, in one sentence.")


class FindDuplicatesInput(BaseModel):
    query: str = Field(description="Words to search the open issues for.")


class ConfirmInput(BaseModel):
    pass


class WithdrawInput(BaseModel):
    reason: str = Field(description="Why the issue is withdrawn.")


class Door(BaseModel):
    title: str = Field(description="The issue's title.")
    body: str = Field(description="The issue's text, as the reporter wrote it.")


label = define_event(
    name="label",
    input=LabelInput,
    audience="any",
    description="Label the issue. From the triage Agent this is a proposal the desk confirms; "
    "from the desk it is final.",
)
find_duplicates = define_event(
    name="find_duplicates",
    input=FindDuplicatesInput,
    description="Search the open issues for duplicates. The matches are the answer to this call.",
)
confirm = define_event(name="confirm", input=ConfirmInput, description="Accept the triage Agent's proposed label.")
withdraw = define_event(
    name="withdraw", input=WithdrawInput, audience="external", description="Close the issue without a label."
)


def search_issues(query: str) -> list[dict]:
    """The Effect's function (a host calls it; the Session never does): the open issues whose titles share a word
    with `query`, from the JSON list of `{"id", "title"}` in the file named by `TRIAGE_ISSUES`."""
    path = os.environ.get("TRIAGE_ISSUES")
    if not path:
        return []
    with open(path, encoding="utf-8") as f:
        issues = json.load(f)
    words = {w.lower() for w in query.split()}
    return [issue for issue in issues if words & {w.lower() for w in str(issue.get("title", "")).split()}]


def desk_meta(context: dict) -> dict:
    """What the desk reads: the issue, and once the triage Agent has proposed a label, the proposal it confirms."""
    meta = {"title": context["title"], "body": context["body"]}
    if context.get("proposal"):
        meta["proposed label"] = context["proposal"]["label"]
        meta["because"] = context["proposal"]["reason"]
    return meta


machine = jr2_setup(
    events=[label, find_duplicates, confirm, withdraw],
    actors={
        "triager": agent(
            model="anthropic/claude-haiku-5-5",
            instructions="You triage issue reports. Look for duplicates when the report may be a known "
            "problem, then propose one label with a short reason.",
            workspace="none",
        ),
        "duplicates": effect.call(search_issues, idempotent=True),
        "fail": fail(),
    },
).create_machine(
    {
        "id": "triage",
        "input": Door,
        "context": lambda input: {
            "title": input.title,
            "body": input.body,
            "proposal": None,
            "label": None,
            "labelled_by": None,
            "withdrawn": None,
        },
        "on": {
            "agent.fault": ".failed",
            "withdraw": {"target": ".withdrawn", "actions": assign(withdrawn=lambda event: event.reason)},
        },
        "initial": "triaging",
        "states": {
            "triaging": {
                "invoke": {
                    "src": "gate",
                    "id": "desk",
                    "input": lambda context: {"meta": desk_meta(context)},
                },
                "on": {
                    "label": [
                        {
                            "guard": sent_by("desk"),
                            "target": "labelled",
                            "actions": assign(label=lambda event: event.label, labelled_by="desk"),
                        },
                        {
                            # Re-entered, so the desk's Gate opens again with the proposal in its meta.
                            "target": ".proposed",
                            "reenter": True,
                            "actions": assign(proposal=lambda event: {"label": event.label, "reason": event.reason}),
                        },
                    ]
                },
                "initial": "sorting",
                "states": {
                    "sorting": {
                        "invoke": {
                            "src": "triager",
                            "input": lambda context: {
                                "prompt": "Triage this issue.\nTitle: " + context["title"] + "\n\n" + context["body"]
                            },
                        },
                        "initial": "reading",
                        "states": {
                            "reading": {"on": {"find_duplicates": "searching"}},
                            "searching": {
                                "invoke": {
                                    "src": "duplicates",
                                    "input": from_pick(fill=lambda params: {"query": params["query"]}),
                                    "onDone": "reading",
                                    "onError": {
                                        "target": "reading",
                                        "actions": answer(lambda event: "The search failed: " + str(event.error)),
                                    },
                                },
                            },
                        },
                    },
                    "proposed": {
                        "on": {
                            "confirm": {
                                "target": "#triage.labelled",
                                "actions": assign(
                                    label=lambda context: context["proposal"]["label"], labelled_by="triager"
                                ),
                            }
                        }
                    },
                },
            },
            "labelled": {"type": "final"},
            "withdrawn": {"type": "final"},
            "failed": {
                "invoke": {
                    "src": "fail",
                    "input": lambda event: {
                        "reason": "the triage Agent's Turn could not go on: "
                        + str(event.get("reason", "no reason given"))
                    },
                }
            },
        },
        "output": lambda context: {
            "label": context["label"],
            "labelled_by": context["labelled_by"],
            "withdrawn": context["withdrawn"],
        },
    }
)


@scripted("triage.triager")
def offline_triager(turn):
    """The offline demo's triage Agent (a scripted stand-in): search for duplicates by the title's words once, then
    propose a label from a few telling words."""
    title = turn.prompt.splitlines()[1].removeprefix("Title: ") if len(turn.prompt.splitlines()) > 1 else ""
    if not turn.answers and "find_duplicates" in turn.allowed_picks:
        return ("find_duplicates", {"query": title or "crash"})
    if "label" in turn.allowed_picks:
        text = turn.prompt.lower()
        kind = (
            "bug"
            if any(w in text for w in ("crash", "error", "fails", "broken"))
            else "question"
            if "?" in text
            else "feature"
        )
        return ("label", {"label": kind, "reason": f"the report reads like a {kind}"})
    return None
