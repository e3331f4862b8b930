"""What both differential modes share: where node and the xstate install are, running a node runner on charts in
batches (in the background too, so node works while Python runs our engine), the time limit on our engine's run of
one chart, and the seeds a run covers."""

from __future__ import annotations

import gc
import json
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
NODE_MODULES = Path(os.environ.get("XSTATE_NODE_MODULES") or HERE / ".node" / "node_modules")
CHART_TIMEOUT_S = 10  # a chart that takes longer in our engine is reported as a (probable) infinite loop


def xstate_missing() -> str | None:
    """Why xstate cannot run here, or None if it can."""
    if shutil.which("node") is None:
        return "node is not on PATH"
    if not (NODE_MODULES / "xstate" / "package.json").exists():
        return f"xstate is not installed in {NODE_MODULES}"
    return None


def require_xstate() -> None:
    """Fail the test when xstate cannot run (skip it instead with JR2_DIFF_ALLOW_SKIP=1)."""
    import pytest

    why = xstate_missing()
    if why is None:
        return
    if os.environ.get("JR2_DIFF_ALLOW_SKIP") == "1":
        pytest.skip(f"differential test skipped: {why} (JR2_DIFF_ALLOW_SKIP=1); run `make node` to enable it")
    pytest.fail(
        f"the differential test needs xstate: {why}. Run `make node` (or set JR2_DIFF_ALLOW_SKIP=1 to skip)",
        pytrace=False,
    )


def run_runner(runner: Path, charts: list[dict], fields: Mapping[str, Any], batch: int) -> list[list[dict]]:
    """Each chart's steps as `runner` (an .mjs file reading `{"charts": [...]}` on stdin) gives them, in order: one
    node process per `batch` charts, each chart sent as its `fields` (a missing one as its default here)."""
    return [steps for i in range(0, len(charts), batch) for steps in _run_batch(runner, charts[i : i + batch], fields)]


def _run_batch(runner: Path, charts: list[dict], fields: Mapping[str, Any]) -> list[list[dict]]:
    payload = json.dumps({"charts": [{k: c.get(k, default) for k, default in fields.items()} for c in charts]})
    env = dict(os.environ, XSTATE_NODE_MODULES=str(NODE_MODULES))
    proc = subprocess.run(
        ["node", "--max-old-space-size=4096", str(runner)],
        input=payload,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{runner.name} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    results = json.loads(proc.stdout)["results"]
    assert len(results) == len(charts)
    return [r["steps"] for r in results]


def in_background(run: Callable[[list[dict]], list[list[dict]]], charts: list[dict]) -> Future:
    """`run(charts)` on a thread of its own; its result when asked."""
    pool = ThreadPoolExecutor(max_workers=1)
    future = pool.submit(run, charts)
    pool.shutdown(wait=False)
    return future


class ChartTimeout(BaseException):
    """A chart that ran past CHART_TIMEOUT_S. Not an Exception: a running Actor turns an Exception raised in its step
    into status "error", and a slow chart would then look like a disagreement."""


def _on_alarm(signum, frame):
    raise ChartTimeout(f"timed out after {CHART_TIMEOUT_S}s (an infinite loop?)")


@contextmanager
def time_limit() -> Iterator[None]:
    """Our engine's run of one chart, stopped by a ChartTimeout after CHART_TIMEOUT_S (SIGALRM: only on the main
    thread, elsewhere unlimited)."""
    if not (hasattr(signal, "SIGALRM") and threading.current_thread() is threading.main_thread()):
        yield
        return
    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(CHART_TIMEOUT_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def run_all(run: Callable[[dict], list[dict]], charts: list[dict]) -> list[list[dict]]:
    """`run` on every chart, each result frozen out of the garbage collector's sight (`gc.freeze`) as it comes: at
    20,000 charts a full collection over the results kept so far took 8 s and more, and the CHART_TIMEOUT_S alarm
    of the chart it fell in went off."""
    out = []
    try:
        for chart in charts:
            out.append(run(chart))
            gc.freeze()
    finally:
        gc.unfreeze()
    return out


def error_step(exc: BaseException) -> dict:
    """The step of a run where our engine raised (the run stops there)."""
    return {"error": f"{type(exc).__name__}: {exc}"}


def seeds(only: str, counts: tuple[str, ...], default: int) -> list[int]:
    """The seeds listed in the variable `only` ("3,17"), else as many as the first of `counts` set says (else
    `default`) from JR2_DIFF_SEED_START."""
    if os.environ.get(only):
        return [int(s) for s in os.environ[only].replace(",", " ").split()]
    n = int(next((os.environ[c] for c in counts if os.environ.get(c)), None) or default)
    start = int(os.environ.get("JR2_DIFF_SEED_START") or 0)
    return list(range(start, start + n))
