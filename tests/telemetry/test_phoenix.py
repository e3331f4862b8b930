"""End to end against a receiver people use: Arize Phoenix, started here on free ports (from its own virtualenv,
`.venv-phoenix`, which `make test` makes: Phoenix pins SDK versions of its own). A notes run on a live `jr2 up`
that exports over OTLP/HTTP arrives in Phoenix as one trace, read back through Phoenix's REST API."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.live_server import free_port, served

ROOT = Path(__file__).resolve().parents[2]
PHOENIX = Path(os.environ.get("JR2_PHOENIX", ROOT / ".venv-phoenix" / "bin" / "phoenix"))

#: `make test` makes Phoenix's virtualenv and sets JR2_REQUIRE_PHOENIX, so there a missing Phoenix fails.
pytestmark = pytest.mark.skipif(
    not PHOENIX.exists() and os.environ.get("JR2_REQUIRE_PHOENIX") != "1",
    reason=f"no Phoenix at {PHOENIX}: `make phoenix` makes it",
)


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("phoenix")
    port = free_port()
    env = {
        **os.environ,
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_WORKING_DIR": str(folder),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = (folder / "phoenix.log").open("w")
    process = subprocess.Popen([str(PHOENIX), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("Phoenix did not start:\n" + (folder / "phoenix.log").read_text()[-3000:])
            time.sleep(0.5)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def spans_of(url: str, trace: str, timeout: float = 60) -> list[dict[str, Any]]:
    """The spans Phoenix holds of one trace, once its run span has arrived."""
    deadline = time.monotonic() + timeout
    found: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        page = httpx.get(f"{url}/v1/projects/default/spans", params={"limit": 1000}, timeout=10)
        if page.status_code == 200:
            found = [s for s in page.json().get("data", []) if s.get("context", {}).get("trace_id") == trace]
            if any(s.get("name") == "invoke_workflow notes" for s in found):
                return found
        time.sleep(1)
    raise AssertionError(f"the run's trace {trace} did not arrive in Phoenix; it holds {len(found)} of its spans")


def test_a_notes_run_arrives_in_phoenix_as_one_trace(phoenix: str, tmp_path: Path) -> None:
    from engine.runtime.telemetry.ids import trace_id

    env = {
        "JR2_SCRIPTED": "1",
        "OTEL_EXPORTER_OTLP_ENDPOINT": phoenix,
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_BSP_SCHEDULE_DELAY": "200",
        "OTEL_SERVICE_NAME": "jr2-test",
    }
    with served(tmp_path, env) as server:
        run_id = server.start_run("notes", {"changes": "A new export button."}, "waiting")
        server.answer(run_id, "writing.asking", "reply", text="Admins")
        server.wait_for(run_id, "done")
        found = spans_of(phoenix, format(trace_id(run_id), "032x"))
    names = {s["name"] for s in found}
    assert {"invoke_workflow notes", "jr2.state writing", "jr2.gate writing.asking", "invoke_agent writer"} <= names
    assert {"execute_tool ask", "execute_tool done"} <= names
    assert any(n.startswith("chat ") for n in names)
    by_id = {s["context"]["span_id"]: s for s in found}
    gate = next(s for s in found if s["name"] == "jr2.gate writing.asking")
    assert by_id[gate["parent_id"]]["name"] == "jr2.state writing.asking"
    assert gate["attributes"]["jr2.gate.event"] == "reply"
    if os.environ.get("JR2_SCREENSHOTS") == "1":
        screenshot(phoenix, format(trace_id(run_id), "032x"))


def screenshot(url: str, trace: str) -> None:
    """docs/screenshots/phoenix-trace.png: the run's trace as Phoenix shows it (`make screenshots`)."""
    from tests.browsers import chromium

    projects = httpx.get(f"{url}/v1/projects", timeout=10).json()["data"]
    project = next(p for p in projects if p["name"] == "default")
    with contextlib.ExitStack() as stack:
        browser = stack.enter_context(chromium())
        tab = browser.new_page(viewport={"width": 1400, "height": 900})
        tab.goto(f"{url}/projects/{project['id']}/traces/{trace}", wait_until="load")
        tab.get_by_text("invoke_workflow notes").first.wait_for(timeout=60_000)
        tab.wait_for_timeout(1000)
        tab.screenshot(path=str(ROOT / "docs" / "screenshots" / "phoenix-trace.png"))
