"""Console benchmark: the run page's render, and how fast a commit reaches 500 open run pages over websockets.

    python -m bench.console              # the full run (`make bench-console`, and `make bench` last)
    python -m bench.console --quick      # a smoke run: 5 renders, 100 pages, one round each
    python -m bench.console --diagnose   # also count what the server's live consumers do (renders, sync calls)
    python -m bench.console --profile    # also cProfile the GETs and the server's event loop while it answers
    python -m bench.console --strict     # exit 1 when a target is missed too (default: only on a wrong result)

Three measurements (the Console's other target, drawing a Machine, is bench/graph.py's):

1. The run page with 500 Turn messages, in one process on a migrated SQLite FILE in a temp dir (DEBUG off, as in
   production; --debug for `make up`'s default). The run is made by the runtime's own code: a Host drives a run of
   the bench's `scribe` workflow, whose scripted Agent takes 234 notes (each a sentence with markup to escape) in
   laps of 22 (11 Turns), then asks at a Gate and waits there: 11 prompts, 245 replies with a pick, 244 tool results
   = 500 messages. The workflow sits in a temp workflows folder (a module that imports it from here), so the
   Console finds it as it finds any workflow. Timed: `GET /runs/<id>/` through Django's test Client as a logged-in
   superuser (the whole request: session, user, the view's reads, the graph, every template), median and p95 of 30
   after 3 warm-ups; target < 150 ms. For comparison the live consumer's `run_regions(...)` (its cache cleared each
   time), and apart: `run_page(...)` (the reads), `run.html`, `_turns.html`, the lit graph.
2. Commit -> fragment with 500 open run pages on a real `jr2 up` (a subprocess on its own SQLite file,
   `JR2_SCRIPTED=1`, DEBUG off, the embedded default's in-memory channel layer); a superuser made with
   `manage.py shell -c`, an API token with `jr2 token create --create-user`, and a session cookie from
   `/accounts/login/`. Each round starts N runs of workflows/notes.py through the API, waits until each waits at its
   Gate, opens 500 websocket clients (the `websockets` package) on `/ws/runs/<id>/` spread evenly over the runs,
   with the session cookie and `Origin: http://127.0.0.1:<port>` as a browser sends them, and waits for each
   client's whole first message. Then every Gate is answered through the API (`POST /api/runs/<id>/gates/
   writing.asking/events`), the wall time noted before each POST: one at a time (the next once every page of the
   run before has its fragment, +0.2 s), back to back, or all at once. A page's latency is the time it receives the
   first fragment after the answer (its status badge says `running` or `done`) minus the commit time of the Gate
   answer (`at` of the journal's `gate` entry, from `GET /api/runs/<id>/journal`: the server's wall clock, the same
   machine's). Target: p95 < 100 ms over all pages. Rows: 10 runs x 50 pages in each of the three modes, and
   1 run x 500 pages (one commit told to all 500); two rounds each, pooled.
3. Channels' in-memory channel layer alone: one `group_send` to a group of 50 or 500 channels, then each channel's
   `receive`, with its expiry scan and without (an experiment: the layer scans every channel and group on every
   receive).

Correctness is checked inside: the rendered run must be waiting at its Gate with all 500 messages recorded, and
every timed page must show the lines of the newest page of Turns (console/feeds.py: older Turns load as the user
scrolls), the status, the Gate form, the latest note escaped and (the whole page) the lit graph; every websocket
page must open whole (waiting, its Gate, its Turns), get nothing before the answer, get a fragment showing the run
moved, and end with one showing it done; every run must end done with the notes its writer made from its own
reply, with exactly that answer in its journal. A wrong result exits 1 and reports no number. Results go to stdout
(markdown) and bench/results/console.json. See docs/benchmarks.md, "Console".
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import io
import json
import math
import os
import platform
import pstats
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: The jr2 command under this interpreter, run from ROOT: this checkout's code (a venv's `jr2` script may import
#: another checkout's, the one it was installed from).
JR2 = [sys.executable, "-m", "jr2.cli"]
RESULTS = Path(__file__).resolve().parent / "results" / "console.json"

if str(ROOT) not in sys.path:  # `python bench/console.py` as well as `python -m bench.console`
    sys.path.insert(0, str(ROOT))

from bench.common import finish  # noqa: E402
from bench.host import cpu_model  # noqa: E402
from bench.runtime import WrongResult, expect, percentile, setup_django  # noqa: E402


def spread(values: list[float]) -> dict[str, float]:
    s = sorted(values)
    return {
        "n": len(s),
        "p50": percentile(s, 50),
        "p90": percentile(s, 90),
        "p95": percentile(s, 95),
        "p99": percentile(s, 99),
        "max": s[-1] if s else float("nan"),
        "min": s[0] if s else float("nan"),
        "mean": statistics.fmean(s) if s else float("nan"),
    }


# ----------------------------------------------------------------------------------------------------------------
# The scribe workflow and its scripted Agent
# ----------------------------------------------------------------------------------------------------------------

PROMPT = re.compile(r"Take (\d+) notes in laps of (\d+), then ask the desk\. Run (\S+): (\d+) so far\.")
FINDINGS = [
    'the parser drops a trailing <br/> & keeps the "smart" quotes; the fix is one line in tokenize() but the '
    "test for it needs a fixture with both encodings",
    "the export button is greyed out for viewers although they may export; the permission check reads "
    "can_edit instead of can_read (see views/export.py, line 88)",
    "a run started from the API with an empty body gets a 500 instead of a 400 naming the field; the door's "
    "model is validated only after the lease is taken",
    "the changelog lists 'Faster Menus' twice, once under Fixes and once under Features; keep the one under "
    "Features and link the benchmark",
    "timezone handling: the nightly report says 23:00 for jobs that ran at 00:00 UTC, because the template "
    "formats naive datetimes in the server's zone",
]


@dataclass
class ScribeLog:
    wrong: list[str] = field(default_factory=list)


LOG = ScribeLog()


def note_text(n: int) -> str:
    return f"Finding {n}: {FINDINGS[n % len(FINDINGS)]}."


def scribe_script(turn: Any) -> tuple[str, dict[str, Any]]:
    """The scripted scribe: `note` until the run's count, a `lap` after every `lap` notes (a new Turn), then `ask`
    at the Gate (the run waits there). It checks every answer it reads and that its pick is allowed."""
    m = PROMPT.fullmatch(turn.prompt)
    if m is None:
        LOG.wrong.append(f"unexpected prompt {turn.prompt!r}")
        return ("ask", {"question": "?"})
    total, lap, label, base = int(m[1]), int(m[2]), m[3], int(m[4])
    answers = turn.answers
    noted = base + sum(1 for a in answers if a.startswith("Noted #"))
    if answers and answers[-1].startswith("Noted #") and not answers[-1].startswith(f"Noted #{noted} "):
        LOG.wrong.append(f"run {label}: read {answers[-1][:40]!r} after {noted} notes")
    if noted >= total:
        pick: tuple[str, dict[str, Any]] = ("ask", {"question": f"I took {noted} notes. Shall I file them?"})
    elif len(answers) >= lap:
        pick = ("lap", {})
    else:
        pick = ("note", {"text": note_text(noted + 1)})
    if pick[0] not in turn.allowed_picks:
        LOG.wrong.append(f"run {label}: {pick[0]} is not allowed ({turn.allowed_picks})")
    return pick


_SCRIBE: Any = None


def scribe_machine() -> Any:
    """The `scribe` workflow: one Agent state whose scripted scribe takes notes (targetless, answered at once),
    laps (a new Turn) and at the end asks at a Gate, where the run waits."""
    global _SCRIBE
    if _SCRIBE is not None:
        return _SCRIBE
    from pydantic import BaseModel, Field

    from engine import agent, answer, assign, define_event, fail, jr2_setup, scripted

    class Empty(BaseModel):
        pass

    class Note(BaseModel):
        text: str = Field(description="One finding, in a sentence or two.")

    class Ask(BaseModel):
        question: str = Field(description="One question for the desk.")

    class Reply(BaseModel):
        text: str = Field(description="The desk's answer.")

    class Door(BaseModel):
        notes: int = Field(description="How many notes to take.")
        lap: int = Field(description="Notes per Turn.")
        label: str = Field(description="The run's name in the bench.")

    scripted("bench.scribe")(scribe_script)
    events = [
        define_event(name="note", input=Note, description="Write down one finding."),
        define_event(name="lap", input=Empty, description="Start a fresh page (a new Turn)."),
        define_event(name="ask", input=Ask, description="Ask the desk; its reply is the answer."),
        define_event(name="reply", input=Reply, description="Answer the scribe."),
    ]

    def prompt(context: dict[str, Any]) -> dict[str, Any]:
        return {
            "prompt": f"Take {context['notes']} notes in laps of {context['lap']}, then ask the desk. "
            f"Run {context['label']}: {context['count']} so far."
        }

    _SCRIBE = jr2_setup(
        events=events,
        actors={
            "scribe": agent(model="script/bench.scribe", instructions="You take notes."),
            "fail": fail(),
        },
    ).create_machine(
        {
            "id": "scribe",
            "input": Door,
            "context": lambda input: {"notes": input.notes, "lap": input.lap, "label": input.label, "count": 0},
            "on": {"agent.fault": ".failed"},
            "initial": "writing",
            "states": {
                "writing": {
                    "invoke": {"src": "scribe", "input": prompt},
                    "on": {
                        "note": {
                            "actions": [
                                assign(count=lambda context: context["count"] + 1),
                                answer(
                                    lambda context, event: (
                                        f"Noted #{context['count']} ({len(event.text.split())} words)."
                                    )
                                ),
                            ]
                        },
                        "lap": {"target": "writing", "reenter": True},
                    },
                    "initial": "idle",
                    "states": {
                        "idle": {"on": {"ask": "asking"}},
                        "asking": {
                            "invoke": {"src": "gate", "input": lambda context: {"meta": {"notes": context["count"]}}},
                            "on": {
                                "reply": {
                                    "target": "#scribe.filed",
                                    "actions": answer(lambda event: "Filed: " + event.text),
                                }
                            },
                        },
                    },
                },
                "filed": {"type": "final"},
                "failed": {
                    "invoke": {
                        "src": "fail",
                        "input": lambda event: {"reason": "the scribe's Turn faulted: " + str(event.get("reason", ""))},
                    }
                },
            },
            "output": lambda context: {"count": context["count"]},
        }
    )
    return _SCRIBE


def scribe_plan(messages: int, lap: int) -> tuple[int, int]:
    """(notes, Turns) of a scribe run whose Turns hold exactly `messages` messages when it waits at its Gate: each
    Turn has its prompt, each pick its reply and its tool result, but the last pick (`ask`) waits for its answer."""
    for notes in range(1, messages):
        turns = math.ceil(notes / lap)
        picks = notes + (turns - 1) + 1  # the notes, a `lap` after every full lap but the last, the `ask`
        if turns + 2 * picks - 1 == messages:
            return notes, turns
    raise SystemExit(f"no scribe run holds exactly {messages} messages in laps of {lap}: try another --lap")


# ----------------------------------------------------------------------------------------------------------------
# 1. The run page
# ----------------------------------------------------------------------------------------------------------------


def make_scribe_run(notes: int, lap: int) -> str:
    """Drive a scribe run through a Host (the workflows registry's Machine) until it waits at its Gate."""
    from engine.runtime.host import Host

    async def main() -> str:
        host = Host(owner="bench-console")
        await host.start()
        try:
            run_id = await host.start_run("scribe", {"notes": notes, "lap": lap, "label": "page"})
            driver = host.drivers[run_id]
            deadline = time.perf_counter() + 60 + notes * 0.05
            while driver.status != "waiting":
                if time.perf_counter() > deadline:
                    raise WrongResult("the scribe run did not reach its Gate in time")
                await asyncio.sleep(0.005)
            return run_id
        finally:
            await host.stop()

    return asyncio.run(main())


def check_scribe_run(run_id: str, notes: int, turns: int, messages: int) -> dict[str, Any]:
    from engine.models import ModelCall, Run, TurnMessage, TurnRecord

    run = Run.objects.get(id=run_id)
    gates = [g["id"] for g in (run.view or {}).get("gates", [])]
    expect(
        (run.status, gates, run.view["context"]["count"]),
        ("waiting", ["writing.asking"], notes),
        f"scribe run {run_id}",
    )
    expect(TurnRecord.objects.filter(run_id=run_id).count(), turns, "Turns of the scribe run")
    expect(TurnMessage.objects.filter(run_id=run_id).count(), messages, "messages of the scribe run")
    if LOG.wrong:
        raise WrongResult(f"the scripted scribe read wrong answers: {LOG.wrong[:3]}")
    sizes = [len(json.dumps(m)) for m in TurnMessage.objects.filter(run_id=run_id).values_list("content", flat=True)]
    return {
        "run": run_id,
        "notes": notes,
        "turns": turns,
        "messages": messages,
        "journal_entries": run.seq,
        "model_calls": ModelCall.objects.filter(run_id=run_id).count(),
        "message_bytes_mean": statistics.fmean(sizes),
        "message_bytes_total": sum(sizes),
    }


LINE = '<li class="line '


def check_page(html: str, run_id: str, lines: int, notes: int, whole: bool) -> None:
    """What the page (or the live regions) must show: the status, the lines of the newest Turns, the Gate form, the
    latest note (escaped), and on the whole page the lit graph."""
    expect(html.count(LINE), lines, "conversation lines on the run page")
    for needle in (
        'id="run-status-badge">waiting<',
        f'action="/runs/{run_id}/gates/writing.asking/"',
        f"Finding {notes}: ",
        "&lt;br/&gt; &amp; keeps",
        'id="seat-scribe"',
        'id="run-turns',
    ):
        if needle not in html:
            raise WrongResult(f"the run page lacks {needle!r}")
    if whole and not re.search(r'<g id="state-writing\.asking" class="[^"]*\bactive\b', html):
        raise WrongResult("the run page's graph does not light writing.asking")


def measure_page(args: argparse.Namespace) -> dict[str, Any]:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.template.loader import render_to_string
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from console.pages import regions as live
    from console.pages.runview import run_page
    from engine.runtime import graph

    notes, turns = scribe_plan(args.messages, args.lap)
    run_id = make_scribe_run(notes, args.lap)
    facts = check_scribe_run(run_id, notes, turns, args.messages)
    print(
        f"  scribe run {run_id}: {notes} notes in {turns} Turns, {args.messages} messages "
        f"({facts['message_bytes_mean']:.0f} B of JSON each), waiting at its Gate",
        flush=True,
    )

    users = get_user_model()
    user = users.objects.filter(username="bench").first() or users.objects.create_superuser("bench", "", "bench-pw")
    client = Client(SERVER_NAME="127.0.0.1")
    client.force_login(user)
    url = f"/runs/{run_id}/"
    from console.pages.feeds import turn_page

    lines = sum(len(item.view.lines) for item in turn_page(run_id).turns)  # the newest page of Turns

    def get() -> str:
        response = client.get(url)
        expect(response.status_code, 200, f"GET {url}")
        return response.content.decode()

    out: dict[str, Any] = {"facts": facts, "url": url}
    t0 = time.perf_counter()
    first = get()  # imports, template compilation, the graph drawn by dot
    out["first_get_s"] = time.perf_counter() - t0
    check_page(first, run_id, lines, notes, whole=True)
    out["page_bytes"] = len(first.encode())
    for _ in range(args.warmup):
        get()
    with CaptureQueriesContext(connection) as queries:
        get()
    out["queries_per_get"] = len(queries.captured_queries)

    def timed(fn: Any, check: Any, reps: int) -> dict[str, list[float]]:
        walls, cpus = [], []
        for _ in range(reps):
            gc.collect()
            w0, c0 = time.perf_counter(), time.process_time()
            result = fn()
            walls.append(time.perf_counter() - w0)
            cpus.append(time.process_time() - c0)
            check(result)
        return {"wall_s": walls, "cpu_s": cpus}

    out["get"] = timed(get, lambda html: check_page(html, run_id, lines, notes, whole=True), args.reps)

    def regions() -> str:
        live._cache.clear()  # the consumer's shared render: each sample renders anew
        html = live.run_regions(run_id, user)
        assert html is not None
        return html

    for _ in range(args.warmup):
        regions()
    out["regions"] = timed(regions, lambda html: check_page(html, run_id, lines, notes, whole=False), args.reps)
    out["regions_bytes"] = len(regions().encode())

    # the parts, apart: the reads and the page's objects; the Turns' template; the lit graph
    page = run_page(run_id, user)
    assert page is not None
    out["run_page"] = timed(lambda: run_page(run_id, user), lambda p: expect(p.run.id, run_id, "run_page"), args.reps)
    machine = page.machine
    out["graph"] = timed(
        lambda: graph.lit_svg(graph.machine_svg(machine), page.active, page.visited),
        lambda svg: expect('class="' in svg, True, "the lit graph"),
        args.reps,
    )
    out["turns_template"] = timed(
        lambda: render_to_string("console/run/_turns.html", {"page": page, "run": page.run, "oob": True}),
        lambda html: expect(html.count(LINE), lines, "lines in _turns.html"),
        args.reps,
    )
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(args.reps):
            get()
        prof.disable()
        for key, order in (("tottime", "tottime"), ("cumulative", "cumulative")):
            text = io.StringIO()
            pstats.Stats(prof, stream=text).sort_stats(order).print_stats(30)
            out[f"cprofile GET by {key}"] = text.getvalue()
    return out


# ----------------------------------------------------------------------------------------------------------------
# 2. Commit -> fragment with many open pages, against a real `jr2 up`
# ----------------------------------------------------------------------------------------------------------------

NOTES_CHANGES = "Faster Menus\nA `jr2 check` command\nLive run pages"
BADGE = re.compile(r'id="run-status-badge">(\w+)<')


def expected_notes(reply: str) -> str:
    """What notes' scripted writer makes of the changes and the editor's reply."""
    bullets = "\n".join(f"- {line}" for line in NOTES_CHANGES.splitlines())
    return f"## What's new\n\n{bullets}\n\n_Written for: {reply}_"


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def proc_cpu_s(pid: int) -> float:
    """utime + stime of a process (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def server_cpu_s(server: Server) -> float:
    return sum(proc_cpu_s(pid) for pid in server.pids)


def server_rss_kib(server: Server) -> int:
    return sum(proc_rss_kib(pid) for pid in server.pids)


# --diagnose: `jr2 up` started through this wrapper, which counts what the live consumers do (renders and their
# time, calls of the consumer's sync function and their time, each `run.updated` handled from its arrival to its
# send) and writes the counters to a file on SIGUSR1. Only for finding where the time goes; the reported numbers
# come from a plain `jr2 up`.
DIAGNOSE_SERVER = r"""
import json, os, signal, sys, time, threading
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "jr2.settings")
import django
django.setup()
from console.consumers import run as live
from console.pages import regions as drawn
stats = {"renders": 0, "render_s": 0.0, "calls": 0, "call_s": 0.0, "updates": []}
lock = threading.Lock()
page, regions, tell = drawn.run_page, live.render_regions, live.RunHub.tell
def run_page(*a, **k):
    t = time.perf_counter()
    try:
        return page(*a, **k)
    finally:
        with lock:
            stats["renders"] += 1
            stats["render_s"] += time.perf_counter() - t
def render_regions(*a, **k):
    t = time.perf_counter()
    try:
        return regions(*a, **k)
    finally:
        with lock:
            stats["calls"] += 1
            stats["call_s"] += time.perf_counter() - t
async def timed_tell(self, message):
    t = time.perf_counter()
    await tell(self, message)
    stats["updates"].append(time.perf_counter() - t)
drawn.run_page, live.render_regions, live.RunHub.tell = run_page, render_regions, timed_tell
if os.environ.get("JR2_BENCH_NO_EXPIRY_SCAN") == "1":
    from channels.layers import InMemoryChannelLayer
    InMemoryChannelLayer._clean_expired = lambda self: None
profiler = None
def dump(signum, frame):
    global profiler
    if os.environ.get("JR2_BENCH_PROFILE") == "1":
        import cProfile, io, pstats
        if profiler is None:
            profiler = cProfile.Profile()
            profiler.enable()
        else:
            profiler.disable()
            for order in ("tottime", "cumulative"):
                text = io.StringIO()
                pstats.Stats(profiler, stream=text).sort_stats(order).print_stats(40)
                stats["profile by " + order] = text.getvalue()
            profiler = None
    with open(os.environ["JR2_BENCH_STATS"], "w") as f:
        json.dump(stats, f)
signal.signal(signal.SIGUSR1, dump)
from django.core.management import execute_from_command_line
execute_from_command_line(["jr2", "jr2", "up", sys.argv[1]])
"""


class Server:
    """A real `jr2 up` in a subprocess, on its own SQLite file in a temp dir, with the scripted stand-ins
    (`JR2_SCRIPTED=1`), the embedded default's in-memory channel layer, and a superuser and an API token made
    with the project's own commands."""

    def __init__(
        self, tmp: Path, debug: bool, diagnose: bool = False, profile: bool = False, no_expiry_scan: bool = False
    ) -> None:
        self.tmp = tmp
        self.diagnose = diagnose or profile or no_expiry_scan
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "JR2_WORKFLOWS")}
        self.env.update(
            DJANGO_SETTINGS_MODULE="jr2.settings",
            JR2_SQLITE_PATH=str(tmp / "server.sqlite3"),
            JR2_SCRIPTED="1",
            JR2_DEBUG="1" if debug else "0",
            JR2_HOST_ID="bench-console",
            PYTHONUNBUFFERED="1",
            JR2_BENCH_STATS=str(tmp / "stats.json"),
            JR2_BENCH_PROFILE="1" if profile else "0",
            JR2_BENCH_NO_EXPIRY_SCAN="1" if no_expiry_scan else "0",
        )
        self.process: subprocess.Popen[bytes] | None = None
        self.log = tmp / "server.log"
        self.token = ""

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0:
            raise WrongResult(f"manage.py {' '.join(args)} failed: {done.stderr[-2000:]}")
        return done.stdout

    def prepare(self) -> None:
        """Migrate the database, make the superuser `bench` (for the session cookie) and an API token."""
        self.manage("migrate", "--verbosity", "0")
        self.manage(
            "shell",
            "-c",
            "from django.contrib.auth import get_user_model; "
            "get_user_model().objects.create_superuser('bench', '', 'bench-pw')",
        )
        token = subprocess.run(
            [*JR2, "token", "create", "bench-api", "--create-user"],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if token.returncode != 0 or not token.stdout.strip():
            raise WrongResult(f"jr2 token create failed: {token.stderr[-2000:]}")
        self.token = token.stdout.strip().splitlines()[-1]

    def start(self) -> None:
        self.prepare()
        command = [sys.executable, "-c", DIAGNOSE_SERVER] if self.diagnose else [*JR2, "up"]
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [*command, f"127.0.0.1:{self.port}"], cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + 120
        while "is driving" not in self.log.read_text(errors="replace"):
            if self.process.poll() is not None:
                raise WrongResult(f"jr2 up exited with {self.process.returncode}: {self.log.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                raise WrongResult("jr2 up did not start within 120 s")
            time.sleep(0.05)

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    @property
    def pids(self) -> list[int]:
        """The server's processes, whose CPU and memory are counted (a fleet has several)."""
        return [self.pid]

    @property
    def endpoints(self) -> list[Any]:
        """Where pages open (anything with `port` and `url`): page i on endpoint i modulo their number."""
        return [self]

    async def stats(self) -> dict[str, Any]:
        """--diagnose: the wrapper's counters so far."""
        path = self.tmp / "stats.json"
        path.unlink(missing_ok=True)
        os.kill(self.pid, __import__("signal").SIGUSR1)
        for _ in range(200):
            await asyncio.sleep(0.01)
            try:
                return dict(json.loads(path.read_text()))
            except (OSError, ValueError):
                continue
        raise WrongResult("the diagnosing server did not write its counters")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


async def api(http: Any, method: str, path: str, token: str, body: Any = None, want: int = 200) -> Any:
    response = await http.request(method, path, json=body, headers={"Authorization": f"Bearer {token}"})
    if response.status_code != want:
        raise WrongResult(f"{method} {path}: {response.status_code} {response.text[:300]}")
    return response.json()


async def login(http: Any) -> str:
    """Log in through the Console's login page, as a browser does: the session cookie."""
    page = await http.get("/accounts/login/")
    m = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    if page.status_code != 200 or m is None:
        raise WrongResult(f"GET /accounts/login/: {page.status_code}")
    response = await http.post(
        "/accounts/login/", data={"username": "bench", "password": "bench-pw", "csrfmiddlewaretoken": m[1]}
    )
    session = http.cookies.get("sessionid")
    if response.status_code != 302 or not session:
        raise WrongResult(f"logging in failed: {response.status_code} {response.text[:300]}")
    return str(session)


@dataclass
class Page:
    """One open run page: a websocket client and what it received (wall-clock time, status badge, size)."""

    run: str
    index: int
    t_connect: float = 0.0
    t_open: float = 0.0
    t_first: float = 0.0
    first_ok: bool = False
    received: list[tuple[float, str, int]] = field(default_factory=list)
    error: str = ""
    done: asyncio.Event = field(default_factory=asyncio.Event)
    first: asyncio.Event = field(default_factory=asyncio.Event)


async def keep_page(
    server: Any, session: str, page: Page, stop: asyncio.Event, opening: asyncio.Semaphore | None = None
) -> None:
    """Open the run page's websocket on `server` (anything with `port` and `url`) as a browser does (its cookie, its
    Origin), read the whole view, then every fragment until one says the run is done. With `opening`, at most that
    many pages are opening at once (each holds it until its whole view is in)."""
    from websockets.asyncio.client import connect

    uri = f"ws://127.0.0.1:{server.port}/ws/runs/{page.run}/"
    if opening is not None:
        await opening.acquire()

    def opened() -> None:
        nonlocal opening
        if opening is not None:
            opening.release()
            opening = None

    page.t_connect = time.time()
    try:
        async with connect(
            uri,
            additional_headers={"Cookie": f"sessionid={session}", "Origin": server.url},
            proxy=None,
            open_timeout=120,
            max_size=2**24,
            ping_interval=None,
        ) as ws:
            page.t_open = time.time()
            async for message in ws:
                now = time.time()
                text = message if isinstance(message, str) else message.decode()
                m = BADGE.search(text)
                status = m[1] if m else ""
                page.received.append((now, status, len(text)))
                if not page.first.is_set():
                    page.t_first = now
                    page.first_ok = (
                        status == "waiting" and 'id="run-turns-head"' in text and 'id="gate-writing.asking"' in text
                    )
                    page.first.set()
                    opened()
                if status == "done":
                    page.done.set()
                    await stop.wait()
                    break
    except Exception as err:
        page.error = f"{type(err).__name__}: {err}"
    finally:
        opened()
        page.first.set()
        page.done.set()


def at_seconds(iso: str) -> float:
    import datetime as dt

    return dt.datetime.fromisoformat(iso).timestamp()


async def loop_lag(samples: list[float], stop: asyncio.Event) -> None:
    """How late this process's event loop wakes up (1 ms sleeps): when it is busy, the clients' receive times are
    late by that much, which would count against the server."""
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        t0 = loop.time()
        await asyncio.sleep(0.001)
        samples.append(loop.time() - t0 - 0.001)


async def until_waiting(http: Any, token: str, run_ids: list[str], timeout: float) -> dict[str, int]:
    """Poll the API until every run waits at its Gate; each run's journal length then."""
    deadline = time.monotonic() + timeout
    seqs: dict[str, int] = {}
    while len(seqs) < len(run_ids):
        for run_id in [r for r in run_ids if r not in seqs]:
            run = await api(http, "GET", f"/api/runs/{run_id}", token)
            if run["status"] == "waiting" and [g["id"] for g in run["gates"]] == ["writing.asking"]:
                seqs[run_id] = run["seq"]
            elif run["status"] not in ("running", "waiting"):
                raise WrongResult(f"notes run {run_id} is {run['status']} before its Gate: {run['reason']}")
        if len(seqs) < len(run_ids):
            if time.monotonic() > deadline:
                raise WrongResult(f"{len(run_ids) - len(seqs)} notes runs did not reach their Gate in {timeout} s")
            await asyncio.sleep(0.05)
    return seqs


async def live_round(
    server: Server, http: Any, session: str, runs: int, pages_n: int, mode: str, label: str, args: argparse.Namespace
) -> dict[str, Any]:
    """One round: `runs` notes runs at their Gates, `pages_n` pages open on them (spread evenly), every Gate
    answered through the API, each page's fragments timed. `mode`: "one" answers a Gate once every page of the run
    before has its fragment (and `args.gap` later); "seq" answers them back to back (each POST once the last one
    has answered); "all" sends every POST at once."""
    token = server.token
    created = await asyncio.gather(
        *(
            api(http, "POST", "/api/workflows/notes/runs", token, {"changes": NOTES_CHANGES}, want=201)
            for _ in range(runs)
        )
    )
    run_ids = [c["id"] for c in created]
    waiting_seq = await until_waiting(http, token, run_ids, 60 + runs * 0.5)

    stop = asyncio.Event()
    pages = [Page(run_ids[i % len(run_ids)], i) for i in range(pages_n)]
    gc.collect()
    rss0 = server_rss_kib(server)
    cpu0, t0 = server_cpu_s(server), time.time()
    endpoints = server.endpoints
    limit = getattr(args, "open_at_once", 0)
    opening = asyncio.Semaphore(limit) if limit else None
    tasks = [
        asyncio.create_task(keep_page(endpoints[page.index % len(endpoints)], session, page, stop, opening))
        for page in pages
    ]
    try:
        await asyncio.wait_for(asyncio.gather(*(p.first.wait() for p in pages)), 300)
    except TimeoutError:
        raise WrongResult(f"{sum(not p.first.is_set() for p in pages)} pages got no first message in 300 s") from None
    connect_s = max(p.t_first for p in pages) - t0
    connect_cpu = server_cpu_s(server) - cpu0
    bad = [p for p in pages if p.error or not p.first_ok]
    if bad:
        raise WrongResult(
            f"{len(bad)} pages did not open whole (waiting, its Gate, its Turns): {bad[0].error or bad[0].received[:1]}"
        )
    rss1 = server_rss_kib(server)

    await asyncio.sleep(args.settle)
    if any(len(p.received) != 1 for p in pages):
        raise WrongResult("a page got a fragment before any Gate was answered")
    lags: list[float] = []
    lag_stop = asyncio.Event()
    lag_task = asyncio.create_task(loop_lag(lags, lag_stop))
    replies = {run_id: f"Reader {label} {i}" for i, run_id in enumerate(run_ids)}
    posted: dict[str, float] = {}
    by_run: dict[str, list[Page]] = {}
    for page in pages:
        by_run.setdefault(page.run, []).append(page)
    timeout = 120 + pages_n * 0.1

    async def answer(run_id: str) -> None:
        posted[run_id] = time.time()
        result = await api(
            http,
            "POST",
            f"/api/runs/{run_id}/gates/writing.asking/events",
            token,
            {"type": "reply", "text": replies[run_id]},
        )
        expect(result["outcome"], "delivered", f"the Gate answer to run {run_id}")

    async def seen(some: list[Page]) -> None:
        try:
            await asyncio.wait_for(asyncio.gather(*(p.done.wait() for p in some)), timeout)
        except TimeoutError:
            raise WrongResult(
                f"{sum(not p.done.is_set() for p in some)} pages did not see their run done in {timeout:.0f} s"
            ) from None

    before = await server.stats() if server.diagnose else None
    cpu1, c1, w1 = server_cpu_s(server), time.process_time(), time.time()
    if mode == "one":
        for run_id in run_ids:
            await answer(run_id)
            await seen(by_run[run_id])
            await asyncio.sleep(args.gap)
    elif mode == "seq":
        for run_id in run_ids:
            await answer(run_id)
    else:
        await asyncio.gather(*(answer(run_id) for run_id in run_ids))
    await seen(pages)
    answer_wall, answer_cpu = time.time() - w1, server_cpu_s(server) - cpu1
    client_cpu = time.process_time() - c1
    diagnosed: dict[str, Any] = {}
    if before is not None:
        after = await server.stats()
        diagnosed = {
            "renders": after["renders"] - before["renders"],
            "render_s": after["render_s"] - before["render_s"],
            "sync_calls": after["calls"] - before["calls"],
            "sync_call_s": after["call_s"] - before["call_s"],
            "dispatch_s": spread(after["updates"][len(before["updates"]) :]),
            **{k: v for k, v in after.items() if k.startswith("profile")},
        }
    lag_stop.set()
    await lag_task
    stop.set()
    await asyncio.gather(*tasks)

    # the database: every run done with the notes its writer made from its own reply; the commits' times
    commits: dict[str, dict[str, float]] = {}
    for run_id in run_ids:
        run = await api(http, "GET", f"/api/runs/{run_id}", token)
        expect(
            (run["status"], run["output"]), ("done", {"notes": expected_notes(replies[run_id])}), f"notes run {run_id}"
        )
        journal = await api(http, "GET", f"/api/runs/{run_id}/journal?after={waiting_seq[run_id]}", token)
        gates = [e for e in journal["entries"] if e["kind"] == "gate"]
        expect(
            [(e["entry"]["gate"], e["entry"]["params"]) for e in gates],
            [("writing.asking", {"text": replies[run_id]})],
            f"the Gate answer in run {run_id}'s journal",
        )
        commits[run_id] = {"gate_at": at_seconds(gates[0]["at"]), "done_at": at_seconds(journal["entries"][-1]["at"])}

    moved, done, post_to_moved, fragments = [], [], [], []
    for page in pages:
        if page.error:
            raise WrongResult(f"page {page.index} of run {page.run}: {page.error}")
        after_answer = page.received[1:]
        if not after_answer or after_answer[-1][1] != "done":
            raise WrongResult(
                f"page {page.index} of run {page.run} did not get the done fragment: {[s for _, s, _ in page.received]}"
            )
        if any(s not in ("running", "done") for _, s, _ in after_answer):
            raise WrongResult(
                f"page {page.index}: a fragment after the answer without the run moved: "
                f"{[s for _, s, _ in page.received]}"
            )
        c = commits[page.run]
        first_moved = after_answer[0][0]
        if first_moved < c["gate_at"]:
            raise WrongResult(f"page {page.index}: a fragment before the commit it shows")
        moved.append(first_moved - c["gate_at"])
        done.append(after_answer[-1][0] - c["done_at"])
        post_to_moved.append(first_moved - posted[page.run])
        fragments.append(float(len(after_answer)))
    return {
        "mode": mode,
        "runs": len(run_ids),
        "pages": len(pages),
        "connect_s": connect_s,
        "connect_page_s": spread([p.t_first - p.t_connect for p in pages]),
        "connect_server_cpu_s": connect_cpu,
        "first_message_bytes": statistics.fmean(p.received[0][2] for p in pages),
        "fragment_bytes": statistics.fmean(n for p in pages for _, _, n in p.received[1:]),
        "server_rss_before_kib": rss0,
        "server_rss_open_kib": rss1,
        "answer_wall_s": answer_wall,
        "answer_server_cpu_s": answer_cpu,
        "answer_client_cpu_s": client_cpu,
        "commit_to_moved_s": spread(moved),
        "commit_to_done_s": spread(done),
        "post_to_moved_s": spread(post_to_moved),
        "post_to_commit_s": spread([commits[r]["gate_at"] - posted[r] for r in run_ids]),
        "gate_to_done_commit_s": spread([commits[r]["done_at"] - commits[r]["gate_at"] for r in run_ids]),
        "fragments_per_page": spread(fragments),
        "client_loop_lag_s": spread(lags) if lags else {},
        "diagnosed": diagnosed,
        "moved_s": moved,
    }


def parse_configs(text: str) -> list[tuple[int, str]]:
    configs = []
    for item in text.split(","):
        runs, _, mode = item.partition(":")
        if not runs.isdigit() or mode not in ("one", "seq", "all"):
            raise SystemExit(f"--live: {item!r} is not RUNS:MODE with MODE one, seq or all")
        configs.append((int(runs), mode))
    return configs


async def measure_live(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    import httpx

    server = Server(tmp, args.debug, args.diagnose, args.profile, args.without_expiry_scan)
    server.start()
    out: dict[str, Any] = {"port": server.port, "configs": []}
    try:
        async with httpx.AsyncClient(
            base_url=server.url, trust_env=False, timeout=60, limits=httpx.Limits(max_connections=50)
        ) as http:
            session = await login(http)
            await live_round(server, http, session, 1, 1, "one", "warm-up", args)  # imports, first renders
            for runs, mode in parse_configs(args.live):
                rounds = []
                for r in range(args.rounds):
                    label = f"{runs}:{mode} #{r + 1}"
                    rounds.append(await live_round(server, http, session, runs, args.pages, mode, label, args))
                    x = rounds[-1]
                    print(
                        f"  {label}: {x['pages']} pages open in {x['connect_s']:.2f} s; commit -> fragment p50 "
                        f"{x['commit_to_moved_s']['p50'] * 1e3:.1f} ms, p95 {x['commit_to_moved_s']['p95'] * 1e3:.1f}"
                        f" ms, max {x['commit_to_moved_s']['max'] * 1e3:.1f} ms",
                        flush=True,
                    )
                out["configs"].append(
                    {
                        "runs": runs,
                        "mode": mode,
                        "rounds": rounds,
                        "commit_to_moved_s": spread([v for x in rounds for v in x["moved_s"]]),
                    }
                )
        out["server_cpu_total_s"] = proc_cpu_s(server.pid)
        out["server_rss_kib"] = proc_rss_kib(server.pid)
    finally:
        server.stop()
        out["server_log_tail"] = server.log.read_text(errors="replace")[-2000:]
    return out


# ----------------------------------------------------------------------------------------------------------------
# 3. The in-memory channel layer alone: one notice to a group of N pages
# ----------------------------------------------------------------------------------------------------------------


async def layer_once(n: int, expiry_scan: bool) -> tuple[float, float]:
    from channels.layers import InMemoryChannelLayer

    layer = InMemoryChannelLayer()
    if not expiry_scan:
        layer._clean_expired = lambda: None  # type: ignore[method-assign]  # the experiment, never the product
    names = [await layer.new_channel() for _ in range(n)]
    for name in names:
        await layer.group_add("run-bench", name)
    message = {
        "type": "run.updated",
        "run": "bench",
        "workflow": "notes",
        "status": "running",
        "seq": 7,
        "updated": "2026-12-01T12:00:00.123456+00:00",
    }
    t0 = time.perf_counter()
    await layer.group_send("run-bench", message)
    t1 = time.perf_counter()
    for name in names:
        got = await layer.receive(name)
        if got.get("updated") != message["updated"]:
            raise WrongResult("the channel layer delivered another message")
    return t1 - t0, time.perf_counter() - t1


def measure_layer(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    for n in (50, args.pages):
        for scan in (True, False):
            sends, receives = [], []
            for _ in range(args.layer_reps):
                s, r = asyncio.run(layer_once(n, scan))
                sends.append(s)
                receives.append(r)
            rows.append(
                {
                    "pages": n,
                    "expiry_scan": scan,
                    "group_send_s": statistics.median(sends),
                    "receives_s": statistics.median(receives),
                }
            )
    return rows


# ----------------------------------------------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------------------------------------------


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.1f} ms" if seconds < 10 else f"{seconds:,.1f} s"


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


MODES = {
    "one": "one Gate at a time (the next once the last run's pages have their fragment, +0.2 s)",
    "seq": "back to back (each POST once the last has answered)",
    "all": "all Gates at once",
}


def report(results: dict[str, Any], args: argparse.Namespace) -> list[str]:
    """Print the tables; return the missed targets."""
    missed: list[str] = []
    page = results.get("page")
    if page:
        f = page["facts"]
        print(
            f"\n### 1. The run page with {f['messages']} Turn messages ({f['turns']} Turns, {f['notes']} notes, "
            f"{f['model_calls']} model calls; {page['page_bytes'] / 1024:,.0f} KiB of HTML; "
            f"{page['queries_per_get']} SQL queries per GET; {args.reps} samples after {args.warmup} warm-ups)\n"
        )
        print("| what | wall p50 | wall p95 | wall max | CPU p50 | target | |")
        print("| --- | ---: | ---: | ---: | ---: | --- | --- |")
        rows = [
            ("`GET /runs/<id>/` (Django test Client, logged in: session, view, graph, templates)", "get", True),
            (
                "the live consumer's `run_regions(...)` (cache cleared: reads and renders every region)",
                "regions",
                False,
            ),
            ("  of which `run_page(...)`: the reads and the page's objects", "run_page", False),
            ("  of which `_turns.html` (the newest page of Turns)", "turns_template", False),
            ("the lit graph (`machine_svg`, cached, + `lit_svg`)", "graph", False),
        ]
        for what, key, target in rows:
            walls, cpus = sorted(page[key]["wall_s"]), sorted(page[key]["cpu_s"])
            mark = ""
            if target:
                ok = percentile(walls, 95) < 0.150
                mark = verdict(ok)
                if not ok:
                    missed.append("run page render")
            print(
                f"| {what} | {ms(percentile(walls, 50))} | {ms(percentile(walls, 95))} | {ms(walls[-1])} | "
                f"{ms(percentile(cpus, 50))} | {'< 150 ms' if target else ''} | {mark} |"
            )
        print(
            f"\nFirst GET (templates compiled, the graph drawn by dot): {ms(page['first_get_s'])}. Messages "
            f"{f['message_bytes_mean']:.0f} B of JSON each on average; journal {f['journal_entries']} entries."
        )
        for key in [k for k in page if k.startswith("cprofile")]:
            print(f"\n{key} ({args.reps} GETs):\n")
            print(page[key])
    live = results.get("live")
    if live:
        print(
            f"\n### 2. Commit -> fragment with {args.pages} open run pages on one `jr2 up` ({args.rounds} round"
            f"{'s' if args.rounds > 1 else ''} per row, pooled)\n"
        )
        print("| runs x pages each | Gates answered | pages | p50 | p95 | p99 | max | target | |")
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |")
        for c in live["configs"]:
            x = c["commit_to_moved_s"]
            ok = x["p95"] < 0.100
            if not ok:
                missed.append(f"commit -> fragment ({c['runs']} runs, {c['mode']})")
            print(
                f"| {c['runs']} x {args.pages // c['runs']} | {MODES[c['mode']]} | {x['n']:,} | {ms(x['p50'])} | "
                f"{ms(x['p95'])} | {ms(x['p99'])} | {ms(x['max'])} | p95 < 100 ms | {verdict(ok)} |"
            )
        print(
            "\nPer round: opening the pages (all at once, each until its whole first message), the answer phase, "
            "and the other spans:\n"
        )
        print(
            "| round | open all pages | page open p50 / p95 | server CPU opening | answer phase wall / server CPU "
            "| POST -> commit p50 | Gate commit -> done commit p50 | POST -> fragment p95 | done commit -> done "
            "fragment p95 | fragments per page | client loop lag p99 |"
        )
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for c in live["configs"]:
            for i, r in enumerate(c["rounds"]):
                print(
                    f"| {c['runs']}:{c['mode']} #{i + 1} | {r['connect_s']:.2f} s | "
                    f"{ms(r['connect_page_s']['p50'])} / {ms(r['connect_page_s']['p95'])} | "
                    f"{r['connect_server_cpu_s']:.2f} s | {r['answer_wall_s']:.2f} s / "
                    f"{r['answer_server_cpu_s']:.2f} s | {ms(r['post_to_commit_s']['p50'])} | "
                    f"{ms(r['gate_to_done_commit_s']['p50'])} | {ms(r['post_to_moved_s']['p95'])} | "
                    f"{ms(r['commit_to_done_s']['p95'])} | {r['fragments_per_page']['mean']:.2f} | "
                    f"{ms(r['client_loop_lag_s'].get('p99', float('nan')))} |"
                )
        r0 = live["configs"][0]["rounds"][0]
        print(
            f"\nFirst message (the whole view) {r0['first_message_bytes']:,.0f} B, fragments "
            f"{r0['fragment_bytes']:,.0f} B; server VmRSS {r0['server_rss_before_kib'] / 1024:,.0f} MiB before "
            f"the pages opened, {r0['server_rss_open_kib'] / 1024:,.0f} MiB with them open."
        )
        if any(r["diagnosed"] for c in live["configs"] for r in c["rounds"]):
            print("\n--diagnose (the server counted what its consumers did in each answer phase):\n")
            print(
                "| round | renders | render time (reads) | sync-thread calls | their time | run.updated handled "
                "p50 / p95 / max |"
            )
            print("| --- | ---: | ---: | ---: | ---: | ---: |")
            for c in live["configs"]:
                for i, r in enumerate(c["rounds"]):
                    d = r["diagnosed"]
                    if d:
                        print(
                            f"| {c['runs']}:{c['mode']} #{i + 1} | {d['renders']} | {ms(d['render_s'])} | "
                            f"{d['sync_calls']} | {ms(d['sync_call_s'])} | {ms(d['dispatch_s']['p50'])} / "
                            f"{ms(d['dispatch_s']['p95'])} / {ms(d['dispatch_s']['max'])} |"
                        )
                    for key in [k for k in d if k.startswith("profile")]:
                        print(f"\nserver event loop thread, {c['runs']}:{c['mode']} #{i + 1}, {key}:\n")
                        print(d[key])
    layer = results.get("layer")
    if layer:
        print(
            "\n### 3. The in-memory channel layer alone: one `group_send` to N pages, then each page's `receive`"
            f" (median of {args.layer_reps})\n"
        )
        print("| pages in the group | expiry scan on each receive | group_send | the N receives |")
        print("| ---: | --- | ---: | ---: |")
        for row in layer:
            print(
                f"| {row['pages']} | {'yes (as shipped)' if row['expiry_scan'] else 'off (experiment)'} | "
                f"{ms(row['group_send_s'])} | {ms(row['receives_s'])} |"
            )
    return missed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.console", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: fewer samples, pages and rounds")
    ap.add_argument("--messages", type=int, default=500, help="Turn messages of the rendered run (default 500)")
    ap.add_argument("--lap", type=int, default=22, help="notes per Turn of that run (default 22: 11 Turns)")
    ap.add_argument("--reps", type=int, help="timed renders (default 30; --quick 5)")
    ap.add_argument("--warmup", type=int, default=3, help="renders before timing (default 3)")
    ap.add_argument("--pages", type=int, help="open run pages (websocket clients) (default 500; --quick 100)")
    ap.add_argument(
        "--live",
        help="RUNS:MODE,... the live rounds, MODE one, seq or all (default "
        "10:one,10:seq,10:all,1:one; --quick 5:one,5:all)",
    )
    ap.add_argument("--rounds", type=int, help="rounds per --live entry, pooled (default 2; --quick 1)")
    ap.add_argument("--settle", type=float, default=0.5, help="seconds between opening the pages and answering")
    ap.add_argument(
        "--gap", type=float, default=0.2, help="mode one: seconds between a run's fragments and the next Gate"
    )
    ap.add_argument("--layer-reps", type=int, default=5, help="channel layer repetitions (default 5)")
    ap.add_argument("--only", default="page,live,layer", help="which measurements (default page,live,layer)")
    ap.add_argument(
        "--profile",
        action="store_true",
        help="cProfile the GETs, and (through --diagnose's wrapper) the server's event loop in each answer phase",
    )
    ap.add_argument(
        "--diagnose",
        action="store_true",
        help="start jr2 up through a wrapper that counts the live "
        "consumers' renders and sync calls (numbers then are not "
        "the plain server's)",
    )
    ap.add_argument(
        "--without-expiry-scan",
        action="store_true",
        help="experiment (implies --diagnose): the server's in-memory channel layer skips its expiry "
        "scan on each receive; never a product setting",
    )
    ap.add_argument("--debug", action="store_true", help="Django's DEBUG on in both parts (as `make up` has it)")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a target is missed, too")
    ap.add_argument("--json", type=Path, default=RESULTS, help=f"results file (default {RESULTS.relative_to(ROOT)})")
    args = ap.parse_args(argv)
    args.reps = args.reps or (5 if args.quick else 30)
    args.pages = args.pages or (100 if args.quick else 500)
    args.live = args.live or ("5:one,5:all" if args.quick else "10:one,10:seq,10:all,1:one")
    args.rounds = args.rounds or (1 if args.quick else 2)
    parse_configs(args.live)
    only = set(args.only.split(","))

    tmp = Path(tempfile.mkdtemp(prefix="jr2-bench-console-"))
    (tmp / "workflows").mkdir()
    # the Console finds the bench's workflow where it finds every workflow: a module in the workflows folder
    (tmp / "workflows" / "scribe.py").write_text(
        "from bench.console import scribe_machine\n\nmachine = scribe_machine()\n"
    )
    os.environ["JR2_WORKFLOWS"] = str(tmp / "workflows")
    setup_django(tmp / "page.sqlite3", args.debug)
    import django
    from django.conf import settings

    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"# Console bench — Python {platform.python_version()}, Django {django.get_version()}, SQLite "
        f"{sqlite3.sqlite_version} (WAL) on {cpu_model()}, {os.cpu_count()} CPUs; DEBUG {settings.DEBUG}",
        flush=True,
    )
    results: dict[str, Any] = {
        "python": platform.python_version(),
        "django": django.get_version(),
        "sqlite": sqlite3.sqlite_version,
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "load_average_before": load,
        "debug": settings.DEBUG,
        "args": {k: str(v) for k, v in vars(args).items()},
    }
    try:
        if "page" in only:
            print(f"1. the run page with {args.messages} Turn messages", flush=True)
            results["page"] = measure_page(args)
        if "live" in only:
            print(f"2. commit -> fragment with {args.pages} open pages on jr2 up", flush=True)
            results["live"] = asyncio.run(measure_live(args, tmp))
        if "layer" in only:
            print("3. the in-memory channel layer alone", flush=True)
            results["layer"] = measure_layer(args)
    except WrongResult as err:
        print(
            f"\nWRONG RESULT: {err}\nno numbers are reported for a Console that shows something else", file=sys.stderr
        )
        return 1
    finally:
        import shutil

        from django.db import connections

        connections.close_all()
        shutil.rmtree(tmp, ignore_errors=True)

    results["load_average_after"] = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    missed = report(results, args)
    print(f"\nLoad average {load} before, {results['load_average_after']} after, on {os.cpu_count()} CPUs.")
    return finish(results, args.json, missed, args.strict)


if __name__ == "__main__":
    sys.exit(main())
