"""The workflow the crash tests run (copied into the live server's workflows folder as `crashy.py`).

A scripted worker builds (a command Effect that is NOT idempotent), checks (a command Effect that IS), asks a human
at a Gate, then finishes with the human's reply as the run's output. Each Effect appends a line to its own file in
$CRASH_COUNT_DIR and then sleeps $CRASH_SLEEP seconds, so a test can kill the server while one runs and count how
often each really ran. Whether the build finished or was interrupted, the output is the same: the reply.
"""

import sys

from pydantic import BaseModel, Field

from engine import agent, answer, assign, define_event, effect, fail, jr2_setup, scripted


class Empty(BaseModel):
    pass


class Reply(BaseModel):
    text: str = Field(description="The answer.")


class Result(BaseModel):
    result: str = Field(description="The result.")


build = define_event(name="build", input=Empty, description="Build the thing (runs at most once).")
check = define_event(name="check", input=Empty, description="Check the thing (safe to run again).")
ask = define_event(name="ask", input=Empty, description="Ask the human.")
reply = define_event(name="reply", input=Reply, description="Answer the worker.")
finish = define_event(name="finish", input=Result, description="Finish with the result.")

WORK = (
    "import os, sys, time; "
    "open(os.path.join(os.environ['CRASH_COUNT_DIR'], sys.argv[1]), 'a').write('run\\n'); "
    "time.sleep(float(os.environ.get('CRASH_SLEEP', '0'))); print(sys.argv[1] + ' done')"
)


def counted(name: str, idempotent: bool):
    return effect.command([sys.executable, "-c", WORK, name], idempotent=idempotent, timeout=60)


def routes(name: str):
    return {
        "onDone": {"target": "idle", "actions": answer(lambda: name + " finished")},
        "onError": {
            "target": "idle",
            "actions": answer(
                lambda event: (
                    name
                    + " failed: "
                    + str(event.error.get("message") if isinstance(event.error, dict) else event.error)
                )
            ),
        },
    }


machine = jr2_setup(
    events=[build, check, ask, reply, finish],
    actors={
        "worker": agent(model="script/crash.worker", instructions="Build, check, ask, then finish."),
        "build": counted("build", idempotent=False),
        "check": counted("check", idempotent=True),
        "fail": fail(),
    },
).create_machine(
    {
        "id": "crashy",
        "initial": "working",
        "on": {"agent.fault": ".failed"},
        "states": {
            "working": {
                "invoke": {"src": "worker", "input": {"prompt": "Build, check, ask, then finish."}},
                "on": {"finish": {"target": "done", "actions": assign(result=lambda event: event.result)}},
                "initial": "idle",
                "states": {
                    "idle": {"on": {"build": "building", "check": "checking", "ask": "asking"}},
                    "building": {"invoke": {"src": "build", **routes("build")}},
                    "checking": {"invoke": {"src": "check", **routes("check")}},
                    "asking": {
                        "invoke": {"src": "gate", "id": "human", "input": {"meta": {"question": "Go on?"}}},
                        "on": {"reply": {"target": "idle", "actions": answer(lambda event: "reply: " + event.text)}},
                    },
                },
            },
            "done": {"type": "final"},
            "failed": {"invoke": {"src": "fail", "input": lambda event: {"reason": str(event.get("reason"))}}},
        },
        "output": lambda context: {"result": context.get("result")},
    }
)


@scripted("crash.worker")
def worker(turn):
    said = [a.splitlines()[0] for a in turn.answers]
    if not any(s.startswith("build ") for s in said):
        return ("build", {})
    if "check finished" not in said:
        return ("check", {})
    replies = [s for s in said if s.startswith("reply: ")]
    if not replies:
        return ("ask", {})
    return ("finish", {"result": replies[-1]})
