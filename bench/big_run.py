"""Big-run benchmark: a run with 10,000 steps and 2,000 Turn messages opens fast, a commit costs the same database
work for 1 or 500 open pages, and a 300-state Machine draws collapsed.

    python -m bench.big_run              # the full run (`make bench-big`)
    python -m bench.big_run --quick      # a smoke run: 2,000 steps, about 400 messages, up to 100 pages
    python -m bench.big_run --strict     # exit 1 when a target is missed too (default: only on a wrong result)

Everything runs in this process on a migrated SQLite file in a temp dir (DEBUG off), with the ledger workflow
(bench/ledger.py) in a temp workflows folder, so the Console finds it as it finds any workflow.

1. The run page. A Host drives a ledger run: its scripted clerk takes 1,000 notes in laps of 20 (51 Turns, about
   2,100 messages), the desk is answered, then ticked until the journal has 10,000 entries (each tick is two: the
   time that passed and the Gate's event). Timed through Django's test Client as a logged-in superuser (the whole
   request: session, user, the reads, the graph, the costs section, every template), median and p95 of 30 after 3
   warm-ups: `GET /runs/<id>/` (target < 300 ms), the deep link `GET /runs/<id>/?step=100`, the next older page of
   steps and of Turns, and the live consumer's render of every region (its cache cleared each time).
2. Live updates with many open pages. The same run, open in N pages (Channels' WebsocketCommunicator on the
   project's websocket routes, in this process: the Console's consumers and `RunHub` as shipped, the in-memory
   channel layer), moves every second (a tick through the Host) for `--seconds`; every page must get the fragment
   with the new step. Counted per update: the SQL queries of the hub's work (its read of the run and its renders,
   in the thread they run in), the renders, the hub's time from the notice to the last page sent, and the time from
   the commit to the last page's fragment. Target: queries per update the same for 1, 10, 100 and 500 pages.
3. The 300-state Machine of bench/graph.py drawn by graphviz expanded, with its 10 top-level compound states
   collapsed, and with all 37 collapsed: first draw (`dot`), cached draw and SVG size.

Correctness is checked inside: the run must hold the steps and messages planned, each timed page must show the 50
newest steps, the summary's counts, the newest Turn's last note (escaped) and a loader for older pages; the deep
link must show step 100 marked; every page must receive every step. A wrong result exits 1 and reports no number.
Results go to stdout (markdown) and bench/results/big_run.json. See docs/benchmarks.md, "Console: big runs".
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import platform
import re
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results" / "big_run.json"

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import finish  # noqa: E402
from bench.console import spread  # noqa: E402
from bench.host import cpu_model  # noqa: E402
from bench.runtime import WrongResult, expect, setup_django  # noqa: E402

STEP = re.compile(r'id="step-(\d+)"')


# ----------------------------------------------------------------------------------------------------------------
# The run
# ----------------------------------------------------------------------------------------------------------------


async def _wait_status(host: Any, run_id: str, status: str, seconds: float) -> None:
    from engine.models import Run

    deadline = time.perf_counter() + seconds
    while not await host.db(lambda: Run.objects.filter(id=run_id, status=status).exists()):
        if time.perf_counter() > deadline:
            raise WrongResult(f"run {run_id} did not reach {status} in {seconds:.0f} s")
        await asyncio.sleep(0.01)


async def make_big_run(host: Any, notes: int, lap: int, steps: int) -> tuple[str, dict[str, float]]:
    """A ledger run of `notes` notes in laps of `lap`, its desk ticked until it has `steps` steps."""
    from engine.models import Run

    spent: dict[str, float] = {}
    t0 = time.perf_counter()
    run_id = await host.start_run("ledger", {"notes": notes, "lap": lap})
    await _wait_status(host, run_id, "waiting", 120 + notes * 0.1)
    spent["clerk_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    done = await host.deliver(run_id, "gate", gate="writing.asking", event="reply", params={"text": "File them."})
    expect(done.outcome, "delivered", "the desk's reply")
    seq = await host.db(lambda: Run.objects.get(id=run_id).seq)
    while seq < steps:
        for _ in range(max(1, (steps - seq) // 2)):
            sent = await host.deliver(run_id, "gate", gate="desk", event="tick", params={})
            expect(sent.outcome, "delivered", "a tick")
        seq = await host.db(lambda: Run.objects.get(id=run_id).seq)
    spent["ticks_s"] = time.perf_counter() - t0
    return run_id, spent


def facts_of(run_id: str, notes: int) -> dict[str, Any]:
    from engine.models import ModelCall, Run, TurnMessage, TurnRecord

    run = Run.objects.get(id=run_id)
    expect((run.status, run.view["context"]["count"]), ("waiting", notes), f"the ledger run {run_id}")
    return {
        "run": run_id,
        "steps": run.seq,
        "turns": TurnRecord.objects.filter(run_id=run_id).count(),
        "messages": TurnMessage.objects.filter(run_id=run_id).count(),
        "model_calls": ModelCall.objects.filter(run_id=run_id).count(),
        "ticks": run.view["context"]["ticks"],
    }


# ----------------------------------------------------------------------------------------------------------------
# 1. The page
# ----------------------------------------------------------------------------------------------------------------


def timed(fn: Any, check: Any, reps: int, warmup: int) -> dict[str, Any]:
    """Wall time (the verdict's) and this thread's CPU time (steadier on a busy machine: the Client runs the view
    and SQLite in this thread)."""
    for _ in range(warmup):
        check(fn())
    walls, cpus = [], []
    for _ in range(reps):
        gc.collect()
        t0, c0 = time.perf_counter(), time.thread_time()
        out = fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.thread_time() - c0)
        check(out)
    return {**spread(walls), "cpu": spread(cpus)}


def check_page(html: str, facts: dict[str, Any], notes: int) -> None:
    from console.pages.feeds import STEP_PAGE

    shown = [int(x) for x in STEP.findall(html[html.index('id="run-steps"') : html.index('id="run-turns"')])]
    expect(shown, list(range(facts["steps"], facts["steps"] - STEP_PAGE, -1)), "the newest steps on the page")
    summary = re.sub(r"<[^>]+>", "", html[html.index('id="run-summary"') :].split("</p>", 1)[0])
    for count, word in ((facts["steps"], "step"), (facts["turns"], "Turn"), (facts["messages"], "message")):
        if f"{count:,} {word}" not in summary:
            raise WrongResult(f"the summary lacks {count:,} {word}s: {summary!r}")
    for needle in (
        f"Finding {notes}: the parser drops a trailing &lt;br/&gt; &amp; keeps",
        "older steps…",
        "older Turns…",
        'id="graph"',
    ):
        if needle not in html:
            raise WrongResult(f"the run page lacks {needle!r}")


def measure_page(args: argparse.Namespace, run_id: str, facts: dict[str, Any]) -> dict[str, Any]:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from console.pages import regions as live

    users = get_user_model()
    user = users.objects.filter(username="bench").first() or users.objects.create_superuser("bench", "", "bench-pw")
    client = Client(SERVER_NAME="127.0.0.1")
    client.force_login(user)
    out: dict[str, Any] = {}

    def get(url: str) -> str:
        response = client.get(url)
        expect(response.status_code, 200, f"GET {url}")
        return response.content.decode()

    page_url = f"/runs/{run_id}/"
    t0 = time.perf_counter()
    first = get(page_url)
    out["first_get_s"] = time.perf_counter() - t0
    check_page(first, facts, args.notes)
    out["page_bytes"] = len(first.encode())
    with CaptureQueriesContext(connection) as queries:
        get(page_url)
    out["queries_per_get"] = len(queries.captured_queries)
    out["get"] = timed(lambda: get(page_url), lambda html: check_page(html, facts, args.notes), args.reps, args.warmup)

    def deep_ok(html: str) -> None:
        if 'data-step="100"' not in html or 'id="step-100"' not in html:
            raise WrongResult("the deep link does not show step 100 marked")

    out["deep_link"] = timed(lambda: get(page_url + "?step=100"), deep_ok, args.reps, args.warmup)

    older = facts["steps"] - 500

    def steps_ok(html: str) -> None:
        expect([int(x) for x in STEP.findall(html)], list(range(older - 1, older - 51, -1)), "an older page of steps")

    out["older_steps"] = timed(lambda: get(f"/runs/{run_id}/steps/?before={older}"), steps_ok, args.reps, args.warmup)
    turn_url = re.findall(r'hx-get="(/runs/[^"]+/turns/\?before=\d+)"', first)
    if not turn_url:
        raise WrongResult("the page has no loader for older Turns")

    def turns_ok(html: str) -> None:
        if html.count('<article class="turn') < 1:
            raise WrongResult("an older page of Turns is empty")

    out["older_turns"] = timed(lambda: get(turn_url[0]), turns_ok, args.reps, args.warmup)

    def regions() -> str:
        live._cache.clear()
        html = live.run_regions(run_id, user)
        assert html is not None
        return html

    def regions_ok(html: str) -> None:
        if 'id="run-steps-head"' not in html or f'id="step-{facts["steps"]}"' not in html:
            raise WrongResult("the live regions lack the newest step")

    out["regions"] = timed(regions, regions_ok, args.reps, args.warmup)
    out["regions_bytes"] = len(regions().encode())

    from console.consumers.timeline import chart
    from console.pages import timeline

    def drawn(cold: bool) -> str:
        if cold:
            timeline._WALKS.clear()
        found = chart(run_id, "")
        assert found is not None
        return found[0]

    def chart_ok(html: str) -> None:
        if 'data-kind="gate"' not in html or html.count('data-kind="turn"') < facts["turns"]:
            raise WrongResult("the timeline chart lacks the open Gate or a Turn")

    out["timeline_cold"] = timed(lambda: drawn(True), chart_ok, args.reps, args.warmup)
    out["timeline_kept"] = timed(lambda: drawn(False), chart_ok, args.reps, args.warmup)
    return out


# ----------------------------------------------------------------------------------------------------------------
# 2. Live updates with many open pages
# ----------------------------------------------------------------------------------------------------------------


async def measure_live(args: argparse.Namespace, host: Any, run_id: str) -> list[dict[str, Any]]:
    from channels.routing import URLRouter
    from channels.testing import WebsocketCommunicator
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from console.consumers import run as live
    from console.routing import websocket_urlpatterns
    from engine.models import Run

    app = URLRouter(websocket_urlpatterns)
    user = await get_user_model().objects.aget(username="bench")
    work: dict[str, list[Any]] = {"queries": [], "renders": [], "tells": []}

    def counting(fn: Any, name: str) -> Any:
        def run(*a: Any, **k: Any) -> Any:
            with CaptureQueriesContext(connection) as queries:
                out = fn(*a, **k)
            work["queries"].append(len(queries.captured_queries))
            work["renders"].append(name)
            return out

        return run

    commit_views, render_regions, tell = live.commit_views, live.render_regions, live.RunHub.tell

    async def timed_tell(hub: Any, message: Any) -> None:
        t0 = time.perf_counter()
        await tell(hub, message)
        work["tells"].append(time.perf_counter() - t0)

    rows = []
    for pages in args.pages:
        sockets = []
        t0 = time.perf_counter()
        for _ in range(pages):
            socket = WebsocketCommunicator(app, f"/ws/runs/{run_id}/")
            socket.scope["user"] = user
            connected, _ = await socket.connect(timeout=60)
            if not connected:
                raise WrongResult("a run page's socket was refused")
            first = await socket.receive_from(timeout=60)
            if 'id="run-steps-head"' not in first:
                raise WrongResult("a page did not open whole")
            sockets.append(socket)
        opened = time.perf_counter() - t0
        live.commit_views = counting(commit_views, "commit_views")
        live.render_regions = counting(render_regions, "render_regions")
        live.RunHub.tell = timed_tell  # type: ignore[method-assign]
        updates = []
        try:
            for _ in range(args.seconds):
                for key in work:
                    work[key].clear()
                tick_at = time.perf_counter()
                sent = await host.deliver(run_id, "gate", gate="desk", event="tick", params={})
                expect(sent.outcome, "delivered", "a tick")
                seq = await host.db(lambda: Run.objects.get(id=run_id).seq)
                committed = time.perf_counter()
                needle = f'id="step-{seq}"'
                sizes = []
                for socket in sockets:
                    while True:
                        text = await socket.receive_from(timeout=30)
                        if needle in text:
                            sizes.append(len(text.encode()))
                            break
                last = time.perf_counter()
                for _ in range(100):  # the hub finishes its bookkeeping after the last send
                    if work["tells"]:
                        break
                    await asyncio.sleep(0.01)
                updates.append(
                    {
                        "queries": sum(work["queries"]),
                        "renders": work["renders"].count("render_regions"),
                        "reads": work["renders"].count("commit_views"),
                        "tells": len(work["tells"]),
                        "hub_s": sum(work["tells"]),
                        "commit_to_last_page_s": last - committed,
                        "fragment_bytes": max(sizes),
                    }
                )
                await asyncio.sleep(max(0.0, 1.0 - (time.perf_counter() - tick_at)))
        finally:
            live.commit_views, live.render_regions = commit_views, render_regions
            live.RunHub.tell = tell  # type: ignore[method-assign]
            for socket in sockets:
                await socket.disconnect()
        queries = sorted({u["queries"] for u in updates})
        rows.append(
            {
                "pages": pages,
                "open_s": opened,
                "updates": updates,
                "queries_per_update": queries,
                "renders_per_update": sorted({u["renders"] for u in updates}),
                "hub": spread([u["hub_s"] for u in updates]),
                "last_page": spread([u["commit_to_last_page_s"] for u in updates]),
                "fragment_bytes": max(u["fragment_bytes"] for u in updates),
            }
        )
        print(
            f"  {pages} pages: queries per update {queries}, hub p50 {rows[-1]['hub']['p50'] * 1000:.1f} ms, "
            f"commit -> last page p50 {rows[-1]['last_page']['p50'] * 1000:.1f} ms",
            flush=True,
        )
    return rows


# ----------------------------------------------------------------------------------------------------------------
# 3. The 300-state Machine collapsed
# ----------------------------------------------------------------------------------------------------------------


def measure_graph(args: argparse.Namespace) -> list[dict[str, Any]]:
    from bench.graph import big_machine
    from engine.runtime import graph

    machine = big_machine()
    folds = graph.collapsible(machine)
    rows = []
    for name, collapsed in (
        ("expanded", []),
        ("top level collapsed", [p for p in folds if "." not in p]),
        ("all collapsed", folds),
    ):
        walls, svg = [], ""
        for _ in range(args.graph_reps):
            graph.clear_cache()
            t0 = time.perf_counter()
            svg = graph.machine_svg(machine, collapsed)
            walls.append(time.perf_counter() - t0)
        states = len(re.findall(r'<g id="state-', svg))
        if collapsed and states >= len(machine.nodes):
            raise WrongResult(f"{name}: every state is still drawn")
        t0 = time.perf_counter()
        again = graph.machine_svg(machine, collapsed)
        cached = time.perf_counter() - t0
        expect(again is svg or again == svg, True, "a cached draw returns the same drawing")
        box = re.search(r'viewBox="[\d.]+ [\d.]+ ([\d.]+) ([\d.]+)"', svg)
        if box is None:
            raise WrongResult(f"{name}: the SVG has no viewBox")
        width, height = float(box.group(1)), float(box.group(2))
        rows.append(
            {
                "view": name,
                "collapsed": len(collapsed),
                "states_drawn": states,
                "first_draw": spread(walls),
                "cached_s": cached,
                "svg_bytes": len(svg.encode()),
                "width_pt": width,
                "height_pt": height,
            }
        )
    return rows


# ----------------------------------------------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------------------------------------------


def ms(value: float) -> str:
    return f"{value * 1000:.1f} ms"


def report(results: dict[str, Any], args: argparse.Namespace) -> list[str]:
    missed = []
    facts = results["run"]
    print(
        f"\n## Console: big runs\n\nThe run: {facts['steps']:,} steps, {facts['messages']:,} Turn messages in "
        f"{facts['turns']} Turns, {facts['model_calls']:,} model calls (made in {facts['clerk_s']:.1f} s + "
        f"{facts['ticks_s']:.1f} s).\n"
    )
    if "page" in results:
        page = results["page"]
        print(
            f"**1. Opening it** ({page['page_bytes'] / 1024:.0f} KiB of HTML, {page['queries_per_get']} SQL queries "
            f"per GET, {args.reps} samples; the first GET of the process {page['first_get_s'] * 1000:.0f} ms):\n"
        )
        print("| what | p50 | p95 | max | CPU p50 | target | |\n| --- | ---: | ---: | ---: | ---: | --- | --- |")
        for key, what, target in (
            ("get", "`GET /runs/<id>/`", 0.3),
            ("deep_link", "`GET /runs/<id>/?step=100`", 0.3),
            ("older_steps", "`GET .../steps/?before=N` (50 older steps)", None),
            ("older_turns", "`GET .../turns/?before=N` (older Turns)", None),
            ("regions", "the live consumer's render of every region", None),
            ("timeline_cold", "the timeline chart, walking the whole journal", None),
            ("timeline_kept", "the timeline chart, its walk kept from the last render", None),
        ):
            s = page[key]
            verdict = "" if target is None else ("ok" if s["p95"] < target else "MISSED")
            if verdict == "MISSED":
                missed.append(what)
            print(
                f"| {what} | {ms(s['p50'])} | {ms(s['p95'])} | {ms(s['max'])} | {ms(s['cpu']['p50'])} | "
                f"{'< ' + str(int(target * 1000)) + ' ms' if target else ''} | {verdict} |"
            )
    if "live" in results:
        print(f"\n**2. A commit a second with many open pages** ({args.seconds} updates per row):\n")
        print(
            "| open pages | SQL queries per update | renders per update | hub's work p50 / max | commit -> last page "
            "p50 / p95 | fragment | opening the pages |\n| ---: | --- | --- | ---: | ---: | ---: | ---: |"
        )
        seen = set()
        for row in results["live"]:
            seen.add(tuple(row["queries_per_update"]))
            print(
                f"| {row['pages']} | {', '.join(map(str, row['queries_per_update']))} | "
                f"{', '.join(map(str, row['renders_per_update']))} | {ms(row['hub']['p50'])} / "
                f"{ms(row['hub']['max'])} | {ms(row['last_page']['p50'])} / {ms(row['last_page']['p95'])} | "
                f"{row['fragment_bytes'] / 1024:.1f} KiB | {row['open_s']:.1f} s |"
            )
        if len(seen) != 1:
            missed.append("queries per update grew with the pages")
        print(f"\nQueries per update the same for every number of pages: {'ok' if len(seen) == 1 else 'MISSED'}")
    if "graph" in results:
        print(f"\n**3. The 300-state Machine collapsed** (first draw with `dot`, median of {args.graph_reps}):\n")
        print(
            "| view | states collapsed | state groups drawn | first draw | cached | SVG | size (pt) |\n"
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
        )
        for row in results["graph"]:
            print(
                f"| {row['view']} | {row['collapsed']} | {row['states_drawn']} | {ms(row['first_draw']['p50'])} | "
                f"{row['cached_s'] * 1e6:.0f} us | {row['svg_bytes'] / 1024:.0f} KiB | "
                f"{row['width_pt']:.0f} x {row['height_pt']:.0f} |"
            )
    return missed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smoke run: 2,000 steps, 200 notes, up to 100 pages")
    ap.add_argument("--steps", type=int, help="journal entries of the run (default 10,000; --quick 2,000)")
    ap.add_argument("--notes", type=int, help="notes the clerk takes (default 1,000: about 2,100 messages)")
    ap.add_argument("--lap", type=int, default=20, help="notes per Turn (default 20)")
    ap.add_argument("--reps", type=int, help="timed GETs per row (default 30; --quick 5)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--pages", help="open pages per row, comma-separated (default 1,10,100,500; --quick 1,10,100)")
    ap.add_argument("--seconds", type=int, help="updates (one a second) per row (default 10; --quick 3)")
    ap.add_argument("--graph-reps", type=int, default=3)
    ap.add_argument("--only", default="page,live,graph", help="which measurements (default page,live,graph)")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a target is missed, too")
    ap.add_argument("--json", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    args.steps = args.steps or (2000 if args.quick else 10_000)
    args.notes = args.notes or (200 if args.quick else 1000)
    args.reps = args.reps or (5 if args.quick else 30)
    args.pages = [int(x) for x in (args.pages or ("1,10,100" if args.quick else "1,10,100,500")).split(",")]
    args.seconds = args.seconds or (3 if args.quick else 10)
    only = set(args.only.split(","))

    tmp = Path(tempfile.mkdtemp(prefix="jr2-bench-big-"))
    (tmp / "workflows").mkdir()
    (tmp / "workflows" / "ledger.py").write_text("from bench.ledger import machine  # noqa: F401\n")
    os.environ["JR2_WORKFLOWS"] = str(tmp / "workflows")
    setup_django(tmp / "big.sqlite3", debug=False)
    import django
    from django.conf import settings

    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"# Big-run bench — Python {platform.python_version()}, Django {django.get_version()}, SQLite "
        f"{sqlite3.sqlite_version} on {cpu_model()}, {os.cpu_count()} CPUs; load {load}",
        flush=True,
    )
    results: dict[str, Any] = {
        "python": platform.python_version(),
        "django": django.get_version(),
        "sqlite": sqlite3.sqlite_version,
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "load_average_before": load,
        "args": {k: str(v) for k, v in vars(args).items()},
    }

    async def driven() -> None:
        from asgiref.sync import sync_to_async

        from engine.runtime.host import Host

        host = Host(owner="bench-big")
        await host.start()
        try:
            if only & {"page", "live"}:
                print(f"making a run of {args.steps:,} steps with {args.notes} notes", flush=True)
                run_id, spent = await make_big_run(host, args.notes, args.lap, args.steps)
                results["run"] = {**await sync_to_async(facts_of)(run_id, args.notes), **spent}
                print(f"  {results['run']}", flush=True)
                if "page" in only:
                    print("1. opening it", flush=True)
                    results["page"] = await sync_to_async(measure_page)(args, run_id, results["run"])
                if "live" in only:
                    if "page" not in only:
                        from django.contrib.auth import get_user_model

                        await get_user_model().objects.acreate_superuser("bench", "", "bench-pw")
                    print("2. a commit a second with many open pages", flush=True)
                    results["live"] = await measure_live(args, host, run_id)
        finally:
            await host.stop()

    try:
        asyncio.run(driven())
        if "graph" in only:
            print("3. the 300-state Machine collapsed", flush=True)
            results["graph"] = measure_graph(args)
    except WrongResult as err:
        print(
            f"\nWRONG RESULT: {err}\nno numbers are reported for a Console that shows something else", file=sys.stderr
        )
        return 1
    finally:
        from django.db import connections

        connections.close_all()
        shutil.rmtree(tmp, ignore_errors=True)

    results["load_average_after"] = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    if "run" not in results:
        results["run"] = {"steps": 0, "messages": 0, "turns": 0, "model_calls": 0, "clerk_s": 0, "ticks_s": 0}
    missed = report(results, args)
    print(f"\nLoad average {load} before, {results['load_average_after']} after, on {os.cpu_count()} CPUs.")
    return finish(results, args.json, missed, args.strict)


if __name__ == "__main__":
    sys.exit(main())
