"""Release notes: the reference workflow of SPEC.md and "The Menu".

Shows a mode (`drafting`) and a Gate below an Agent's state (`asking`): the writer's `ask` pick opens the Gate and
stays outstanding until the editor replies; `answer` turns the reply into the text the writer reads back; the
guard on `done` keeps it out of the Allowed picks until the editor has replied once.
"""

from pydantic import BaseModel, Field

from engine import agent, answer, assign, define_event, fail, jr2_setup, scripted


class AskInput(BaseModel):
    question: str = Field(description="One question for the editor.")


class DoneInput(BaseModel):
    notes: str = Field(description="The release notes, in Markdown.")


class ReplyInput(BaseModel):
    text: str = Field(description="The answer, in prose.")


class Door(BaseModel):
    changes: str = Field(description="The changes in this release, one on each line.")


ask = define_event(
    name="ask",
    input=AskInput,
    description="Ask the editor one question. The editor's reply is the answer to this call.",
)
done = define_event(
    name="done", input=DoneInput, description="Call this once, with the finished release notes. Then stop."
)
reply = define_event(name="reply", input=ReplyInput, description="Answer the writer's question.")

machine = jr2_setup(
    events=[ask, done, reply],
    actors={
        "writer": agent(
            model="anthropic/claude-haiku-5-5",
            instructions="You write short release notes. Ask the editor at least one question before you finish.",
            workspace="none",
        ),
        "fail": fail(),
    },
).create_machine(
    {
        "id": "notes",
        "input": Door,
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
                "on": {
                    "done": {
                        "guard": lambda context: context["replies"] > 0,
                        "target": "published",
                        "actions": assign(notes=lambda event: event.notes),
                    }
                },
                "initial": "drafting",
                "states": {
                    "drafting": {
                        "on": {"ask": {"target": "asking", "actions": assign(question=lambda event: event.question)}}
                    },
                    "asking": {
                        "invoke": {"src": "gate", "input": lambda context: {"meta": {"question": context["question"]}}},
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
                    "input": lambda event: {
                        "reason": "the Agent's Turn could not go on: " + str(event.get("reason", "no reason given"))
                    },
                }
            },
        },
        "output": lambda context: {"notes": context.get("notes", "")},
    }
)


@scripted("notes.writer")
def offline_writer(turn):
    """The offline demo's writer (a scripted stand-in, used when no API key is set): one question for the editor,
    then notes made from the changes and the editor's reply."""
    replies = [
        a.splitlines()[0].removeprefix("The editor replied: ")
        for a in turn.answers
        if a.startswith("The editor replied: ")
    ]
    if not replies and "ask" in turn.allowed_picks:
        return ("ask", {"question": "Who reads these notes, and what should they know first?"})
    if replies and "done" in turn.allowed_picks:
        changes = [line.strip() for line in turn.prompt.splitlines()[1:] if line.strip()]
        bullets = "\n".join(f"- {change}" for change in changes)
        return ("done", {"notes": f"## What's new\n\n{bullets}\n\n_Written for: {replies[-1]}_"})
    return None
