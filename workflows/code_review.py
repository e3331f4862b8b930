"""Code review: a coder Agent and a reviewer Agent take turns until the reviewer approves the change.

The work is real: the run starts by copying the project into the run's shared workspace (an Effect that runs in
the coder's workspace folder), the coder changes its files there with the workspace tools, the reviewer can read
them, and the test Effect runs pytest on what the coder wrote (`effect.command(..., workspace="coder")`).

Shows the three places a pick's target can go ("The Menu", Keep the Turn or end it):
- `run_tests` targets a child state of the reviewer's state that runs an Effect (the project's tests). The pick is
  outstanding while the tests run; when they finish the reviewer is at Rest again and reads their output as the
  answer to `run_tests`, in the same Turn. A failed run is not a reply, so `answer` on `onError` tells the reviewer.
  `from_pick(fill=...)` builds the Effect's input from the pick's `focus`, so every param of the pick is read.
- `note` has no target: the reviewer stays in its Turn and `answer` on the pick answers it at once. The findings
  it writes down go to the coder with `request_changes`.
- `approve` is kept out of the Allowed picks by a guard on the context until the tests have run on this change.
- `submit` and `request_changes` leave their Agent's state: the Machine decides the next step. The notes of
  `request_changes` go to the context, and the prompt of `fixing` is built from them. Both Agents' Turns set
  `"continue": True`, so each keeps its conversation; the answer of a pick that ended a Turn is kept as a notice and
  read by that Agent's next Turn.
"""

import os
import sys

from pydantic import BaseModel, Field

from engine import agent, answer, assign, define_event, effect, fail, from_pick, jr2_setup, scripted

#: The project each run starts from (copied into its workspace): CODE_REVIEW_REPO, else the small sample beside
#: this file.
REPO = os.environ.get("CODE_REVIEW_REPO") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "code_review_repo"
)

#: Copies the project named by its one argument into the working directory (the workspace), caches left out.
COPY = (
    "import shutil, sys; shutil.copytree(sys.argv[1], '.', dirs_exist_ok=True, "
    "ignore=shutil.ignore_patterns('__pycache__', '.pytest_cache', '.git'))"
)


class SubmitInput(BaseModel):
    summary: str = Field(description="What the change does and which files it touches, in a few lines.")


class RunTestsInput(BaseModel):
    focus: str = Field(default="", description="A pytest node id or -k expression to run; empty runs every test.")


class NoteInput(BaseModel):
    finding: str = Field(description="One thing the coder must look at: the file, the line and what is wrong.")


class RequestChangesInput(BaseModel):
    notes: str = Field(description="What the coder must change, one point on each line.")


class ApproveInput(BaseModel):
    comment: str = Field(description="Why the change is ready, in one or two sentences.")


class Door(BaseModel):
    task: str = Field(description="The change to make, as a developer would write it in an issue.")


submit = define_event(
    name="submit",
    input=SubmitInput,
    description="Hand your change to the reviewer. Call this when the work is done; then stop.",
)
run_tests = define_event(
    name="run_tests",
    input=RunTestsInput,
    description="Run the project's tests on the change. Their output is the answer to this call.",
)
note = define_event(
    name="note", input=NoteInput, description="Write down one finding for the coder. It goes with `request_changes`."
)
request_changes = define_event(
    name="request_changes",
    input=RequestChangesInput,
    description="Send the change back to the coder with your notes. Then stop.",
)
approve = define_event(
    name="approve",
    input=ApproveInput,
    description="Accept the change. Allowed once the tests have run on it. Then stop.",
)


def _test_args(params):
    """The pytest arguments for one `run_tests` pick: its `focus`, if any."""
    focus = params["focus"].strip()
    return {"args": focus.split() if focus else []}


def _submit():
    """The route of `submit` (from `coding` and from `fixing`): the change goes to a new round of review."""
    return {
        "target": "reviewing",
        "actions": [
            assign(summary=lambda event: event.summary, findings=[], tested=False),
            answer(lambda context: "Your change went to the reviewer (round " + str(context["rounds"] + 1) + ")."),
        ],
    }


def _fixing_prompt(context):
    """The prompt of `fixing`: the reviewer's notes and findings, from the context."""
    findings = "".join("\n- " + finding for finding in context["findings"])
    return (
        "The reviewer asked for changes:\n"
        + context["notes"]
        + ("\nFindings:" + findings if findings else "")
        + "\nMake them, then submit again."
    )


#: The coder's instructions, the same whoever plays the seat (a model, or a coding harness over MCP).
CODER_INSTRUCTIONS = (
    "You are a careful software engineer. The project is in your workspace: read "
    "it, make the smallest change that does the task by writing its files, keep the "
    "tests passing, and say plainly what you changed."
)


def review_machine(machine_id, coder):
    """The code review Machine, with `coder` in the coder's seat: `code_review_harness.py` puts a coding harness
    there (an Agent played over MCP)."""
    return jr2_setup(
        events=[submit, run_tests, note, request_changes, approve],
        actors={
            "coder": coder,
            "reviewer": agent(
                model="anthropic/claude-haiku-5-5",
                instructions="You review code changes. The coder's files are in your workspace. Run the "
                "tests before you accept a change; ask for changes with concrete notes when "
                "something is wrong.",
                workspace="shared",
            ),
            "checkout": effect.command(
                [sys.executable, "-c", COPY, REPO], workspace="coder", timeout=120.0, idempotent=True
            ),
            "tests": effect.command([sys.executable, "-m", "pytest", "-q"], workspace="coder", timeout=900.0),
            "fail": fail(),
        },
    ).create_machine(
        {
            "id": machine_id,
            "input": Door,
            "context": lambda input: {
                "task": input.task,
                "summary": "",
                "notes": "",
                "findings": [],
                "rounds": 0,
                "tested": False,
                "verdict": "",
            },
            "on": {"agent.fault": ".failed"},
            "initial": "checkout",
            "states": {
                "checkout": {
                    "invoke": {"src": "checkout", "onDone": "coding", "onError": "no_project"},
                },
                "coding": {
                    "invoke": {
                        "src": "coder",
                        "input": lambda context: {"prompt": "Make this change:\n" + context["task"], "continue": True},
                    },
                    "on": {"submit": _submit()},
                },
                "reviewing": {
                    "invoke": {
                        "src": "reviewer",
                        "input": lambda context: {
                            "prompt": "Review this change.\nTask:\n"
                            + context["task"]
                            + "\nThe coder's summary:\n"
                            + context["summary"],
                            "continue": True,
                        },
                    },
                    "on": {
                        "note": {
                            "actions": [
                                assign(findings=lambda context, event: [*context["findings"], event.finding]),
                                answer(
                                    lambda context: "Noted. Findings so far: " + str(len(context["findings"])) + "."
                                ),
                            ]
                        },
                        "approve": {
                            "guard": lambda context: context["tested"],
                            "target": "approved",
                            "actions": assign(verdict=lambda event: event.comment),
                        },
                        "request_changes": {
                            "target": "fixing",
                            "actions": [
                                assign(notes=lambda event: event.notes, rounds=lambda context: context["rounds"] + 1),
                                answer(
                                    lambda event: "The change went back to the coder with your notes:\n" + event.notes
                                ),
                            ],
                        },
                    },
                    "initial": "reading",
                    "states": {
                        "reading": {"on": {"run_tests": "testing"}},
                        "testing": {
                            "invoke": {
                                "src": "tests",
                                "input": from_pick(fill=_test_args),
                                "onDone": {"target": "reading", "actions": assign(tested=True)},
                                "onError": {
                                    "target": "reading",
                                    "actions": answer(lambda event: "The tests could not be run: " + str(event.error)),
                                },
                            },
                        },
                    },
                },
                "fixing": {
                    "invoke": {
                        "src": "coder",
                        "input": lambda context: {"prompt": _fixing_prompt(context), "continue": True},
                    },
                    "on": {"submit": _submit()},
                },
                "approved": {"type": "final"},
                "failed": {
                    "invoke": {
                        "src": "fail",
                        "input": lambda event: {
                            "reason": "an Agent's Turn could not go on: " + str(event.get("reason", "no reason given"))
                        },
                    }
                },
                "no_project": {
                    "invoke": {
                        "src": "fail",
                        "input": lambda event: {
                            "reason": "the project could not be copied into the workspace: " + str(event.get("error"))
                        },
                    }
                },
            },
            "output": lambda context: {
                "summary": context["summary"],
                "verdict": context["verdict"],
                "rounds": context["rounds"],
            },
        }
    )


machine = review_machine(
    "code_review",
    agent(model="anthropic/claude-haiku-5-5", instructions=CODER_INSTRUCTIONS, workspace="shared"),
)

#: What the offline coder writes: the change, then the change after the review notes.
CALC = (
    '"""The sample project of the code_review workflow: a calculator the coder changes."""\n\n\n'
    "def sub(a: int, b: int) -> int:\n    return a - b\n\n\n"
    "def add(a: int, b: int) -> int:\n{doc}    return a + b\n"
)
TESTS = (
    "from calc import add, sub\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n\n\n"
    "def {name}():\n    assert add(2, 3) == 5\n"
)
FIRST_CHANGE = [
    ("workspace_read", {"path": "calc.py"}),
    ("workspace_write", {"path": "calc.py", "content": CALC.format(doc="")}),
    ("workspace_write", {"path": "test_calc.py", "content": TESTS.format(name="test_add")}),
]
FIXES = [
    ("workspace_write", {"path": "calc.py", "content": CALC.format(doc='    """The sum of a and b."""\n')}),
    ("workspace_write", {"path": "test_calc.py", "content": TESTS.format(name="test_add_sums_two_numbers")}),
]


@scripted("code_review.coder")
def offline_coder(turn):
    """The offline demo's coder (a scripted stand-in): writes its change into the workspace with the workspace
    tools, one call at a time (each answer comes back before the next call), then hands it to the reviewer."""
    if "submit" not in turn.allowed_picks:
        return None
    fixing = "asked for changes" in turn.prompt
    steps = FIXES if fixing else FIRST_CHANGE
    if turn.workspace and len(turn.answers) < len(steps):
        return steps[len(turn.answers)]
    return (
        "submit",
        {
            "summary": "Addressed the review notes in calc.py."
            if fixing
            else "Added add() to calc.py with a test in test_calc.py."
        },
    )


@scripted("code_review.reviewer")
def offline_reviewer(turn):
    """The offline demo's reviewer (a scripted stand-in): runs the tests, asks for one round of changes, then reads
    calc.py in the shared workspace and approves once the tests have run on the new change."""
    tested = any('"exit_code"' in a or a.startswith("The tests could not be run") for a in turn.answers)
    if not tested and "run_tests" in turn.allowed_picks:
        return ("run_tests", {"focus": ""})
    if not turn.notices and "request_changes" in turn.allowed_picks:
        return ("request_changes", {"notes": "Name the test after what it checks.\nAdd a docstring to add()."})
    if turn.workspace and not any(a.startswith("calc.py, lines") for a in turn.answers):
        return ("workspace_read", {"path": "calc.py"})
    if "approve" in turn.allowed_picks:
        return ("approve", {"comment": "The tests pass and the notes were addressed."})
    return None
