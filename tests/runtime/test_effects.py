"""The Effect runner against real subprocesses, a real local HTTP server and real functions."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from engine import effect
from engine.core.outputs import EffectRequested
from engine.core.slots import EffectSlot
from engine.runtime.effects import EffectOutcome, run_effect
from tests.live_server import free_port
from workflows.triage import search_issues

PY = sys.executable


def request(slot: EffectSlot, input: Any = None) -> EffectRequested:
    """What a Session would ask for this slot (see Session._start)."""
    return EffectRequested("effect-1", "slot", slot.effect, dict(slot.spec), input, slot.idempotent, "state")


def run(slot: EffectSlot, input: Any = None, **kwargs: Any) -> EffectOutcome:
    return asyncio.run(run_effect(request(slot, input), slot, **kwargs))


def py(code: str, **kwargs: Any) -> EffectSlot:
    return effect.command([PY, "-c", code], **kwargs)


def gone(pid: int, within: float = 5.0) -> bool:
    """The process no longer runs (it does not exist, or it is a zombie nobody reaped yet)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return True
        except (FileNotFoundError, IndexError):
            return True
        time.sleep(0.02)
    return False


def alive(pid: int) -> bool:
    return not gone(pid, within=0.0) if pid else False


# A child that starts a grandchild (sharing its stdout) and writes both pids to files, then sleeps or exits.
FAMILY = """
import os, subprocess, sys, time
folder = sys.argv[1]
subprocess.Popen([sys.executable, "-c",
    "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(120)",
    os.path.join(folder, "grandchild.tmp")])
marker = os.path.join(folder, "grandchild.tmp")
while not os.path.exists(marker) or not open(marker).read():
    time.sleep(0.01)
os.rename(os.path.join(folder, "grandchild.tmp"), os.path.join(folder, "grandchild"))
open(os.path.join(folder, "child"), "w").write(str(os.getpid()))
print("ready", flush=True)
if sys.argv[2] == "sleep":
    time.sleep(120)
"""


def pid_in(path: Path) -> int:
    return int(path.read_text()) if path.exists() else 0


# -- command ---------------------------------------------------------------------------------------------------


def test_command_output_is_stdout_stderr_and_exit_code() -> None:
    outcome = run(py("import sys; print('out'); print('err', file=sys.stderr)"))
    assert outcome.ok
    assert outcome.value == {"exit_code": 0, "stdout": "out\n", "stderr": "err\n"}
    assert outcome.duration_ms > 0


def test_non_zero_exit_is_an_error_with_the_streams() -> None:
    outcome = run(py("import sys; print('partial'); print('it broke', file=sys.stderr); sys.exit(3)"))
    assert not outcome.ok
    assert outcome.value["message"] == f"command exited with code 3: {PY}"
    assert (outcome.value["exit_code"], outcome.value["stdout"], outcome.value["stderr"]) == (
        3,
        "partial\n",
        "it broke\n",
    )
    json.dumps(outcome.value)


def test_timeout_kills_the_process_and_its_grandchild(tmp_path: Path) -> None:
    started = time.monotonic()
    outcome = run(py(FAMILY, timeout=3.0), {"args": [str(tmp_path), "sleep"]})
    assert time.monotonic() - started < 8
    assert not outcome.ok
    assert outcome.value["message"] == f"command timed out after 3.0 s: {PY}"
    assert outcome.value["stdout"] == "ready\n"  # what it wrote before the timeout is kept
    child, grandchild = pid_in(tmp_path / "child"), pid_in(tmp_path / "grandchild")
    assert child and grandchild
    assert gone(child) and gone(grandchild)


def test_a_grandchild_holding_the_pipe_after_its_parent_exits_is_killed_at_the_timeout(tmp_path: Path) -> None:
    outcome = run(py(FAMILY, timeout=2.0), {"args": [str(tmp_path), "exit"]})
    assert not outcome.ok and "timed out after 2.0 s" in outcome.value["message"]
    assert outcome.value["exit_code"] == 0  # the leader had exited; its grandchild kept the output open
    assert gone(pid_in(tmp_path / "grandchild"))


def test_cancelling_the_task_kills_the_process_group(tmp_path: Path) -> None:
    async def scenario() -> None:
        task = asyncio.create_task(run_effect(request(py(FAMILY), {"args": [str(tmp_path), "sleep"]})))
        deadline = time.monotonic() + 10
        while not (tmp_path / "child").exists():
            assert time.monotonic() < deadline and not task.done()
            await asyncio.sleep(0.02)
        assert alive(pid_in(tmp_path / "child")) and alive(pid_in(tmp_path / "grandchild"))
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    started = time.monotonic()
    asyncio.run(scenario())
    assert time.monotonic() - started < 10
    assert gone(pid_in(tmp_path / "child")) and gone(pid_in(tmp_path / "grandchild"))


def test_output_cap_truncates_and_marks_without_blocking_the_child() -> None:
    code = "import sys; sys.stdout.write('x' * 10_000_000); sys.stderr.write('e' * 10); print('end', file=sys.stderr)"
    outcome = run(py(code, timeout=30.0), output_cap=1000)
    assert outcome.ok, outcome.value
    assert outcome.value["stdout"] == "x" * 1000
    assert outcome.value["stdout_truncated"] is True
    assert outcome.value["stderr"] == "e" * 10 + "end\n" and "stderr_truncated" not in outcome.value


def test_output_exactly_at_the_cap_is_not_marked() -> None:
    outcome = run(py("import sys; sys.stdout.write('y' * 1000)"), output_cap=1000)
    assert outcome.value == {"exit_code": 0, "stdout": "y" * 1000, "stderr": ""}


def test_args_stdin_and_env_come_from_the_input(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JR2_HOST", "host")
    code = (
        "import os, sys, json; print(json.dumps([sys.argv[1:], sys.stdin.read(), "
        "os.environ['JR2_HOST'], os.environ['A'], os.environ['B']]))"
    )
    slot = py(code, env={"A": "spec", "B": "spec"})
    outcome = run(slot, {"args": ["x", "y z", ";"], "stdin": "héllo\n", "env": {"B": "input"}})
    assert outcome.ok, outcome.value
    assert json.loads(outcome.value["stdout"]) == [["x", "y z", ";"], "héllo\n", "host", "spec", "input"]


def test_a_string_argv_is_split_never_given_to_a_shell() -> None:
    slot = effect.command(f"{shlex.quote(PY)} -c 'import sys; print(sys.argv[1:])' a ; echo pwned")
    outcome = run(slot)
    assert outcome.ok
    assert outcome.value["stdout"] == "['a', ';', 'echo', 'pwned']\n"


def test_a_missing_executable_is_an_error_outcome() -> None:
    outcome = run(effect.command(["/nonexistent/jr2-no-such-program", "--help"]))
    assert not outcome.ok
    assert outcome.value["message"] == "command not found: /nonexistent/jr2-no-such-program"


def test_a_missing_working_directory_is_an_error_outcome(tmp_path: Path) -> None:
    outcome = run(py("print(1)", cwd=str(tmp_path / "nowhere")))
    assert not outcome.ok
    assert outcome.value["message"] == f"working directory does not exist: {tmp_path / 'nowhere'}"


def test_a_relative_cwd_is_taken_from_the_hosts(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    outcome = run(py("import os; print(os.getcwd())", cwd="sub"), cwd=str(tmp_path))
    assert outcome.value["stdout"].strip() == os.path.realpath(tmp_path / "sub")


def test_bad_args_in_the_input_are_an_error_outcome() -> None:
    outcome = run(py("print(1)"), {"args": "not a list"})
    assert not outcome.ok and "args must be a list of strings" in outcome.value["message"]


# -- http ------------------------------------------------------------------------------------------------------


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def _reply(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path == "/echo":
            reply = {
                "method": self.command,
                "token": self.headers.get("X-Token"),
                "content_type": self.headers.get("Content-Type"),
                "body": json.loads(raw) if raw else None,
                "has_body": bool(raw),
            }
            self._reply(200, json.dumps(reply).encode(), "application/json")
        elif self.path == "/text":
            self._reply(200, "plain ünïcode".encode(), "text/plain; charset=utf-8")
        elif self.path == "/big":
            self._reply(200, b"z" * 100_000, "text/plain")
        elif self.path == "/fail":
            self._reply(500, b'{"error": "boom"}', "application/json")
        elif self.path == "/slow":
            time.sleep(3)
            self._reply(200, b"{}", "application/json")
        else:
            self._reply(404, b"no such page", "text/plain")

    do_GET = do_POST = do_PUT = do_DELETE = _handle


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_http_sends_the_input_as_json_and_parses_a_json_reply(server: str) -> None:
    slot = effect.http(server + "/echo", headers={"X-Token": "t0k"})
    outcome = run(slot, {"query": "crash", "n": [1, 2]})
    assert outcome.ok, outcome.value
    assert outcome.value["status"] == 200
    assert outcome.value["body"] == {
        "method": "POST",
        "token": "t0k",
        "content_type": "application/json",
        "body": {"query": "crash", "n": [1, 2]},
        "has_body": True,
    }
    assert outcome.value["headers"]["content-type"] == "application/json"


def test_http_get_sends_no_body_and_a_text_reply_is_text(server: str) -> None:
    echo = run(effect.http(server + "/echo", method="GET"))
    assert echo.value["body"]["method"] == "GET" and echo.value["body"]["has_body"] is False
    text = run(effect.http(server + "/text", method="get"))
    assert text.ok and text.value["body"] == "plain ünïcode"


def test_http_body_is_capped(server: str) -> None:
    outcome = run(effect.http(server + "/big", method="GET"), output_cap=1000)
    assert outcome.ok
    assert outcome.value["body"] == "z" * 1000 and outcome.value["body_truncated"] is True


def test_http_status_500_is_an_error_with_the_status_and_body(server: str) -> None:
    outcome = run(effect.http(server + "/fail", method="GET"))
    assert not outcome.ok
    assert outcome.value["message"] == f"HTTP 500 from {server}/fail"
    assert outcome.value["status"] == 500 and outcome.value["body"] == {"error": "boom"}


def test_http_connection_refused_is_an_error_naming_the_url() -> None:
    url = f"http://127.0.0.1:{free_port()}/hook"
    outcome = run(effect.http(url))
    assert not outcome.ok
    assert outcome.value["message"].startswith(f"HTTP POST {url} failed: ConnectError")
    assert outcome.value["url"] == url


def test_http_timeout_is_an_error_naming_the_url(server: str) -> None:
    started = time.monotonic()
    outcome = run(effect.http(server + "/slow", method="GET", timeout=0.5))
    assert time.monotonic() - started < 2.5
    assert not outcome.ok
    assert outcome.value["message"] == f"HTTP GET {server}/slow timed out after 0.5 s"


# -- call ------------------------------------------------------------------------------------------------------


class Found(BaseModel):
    ids: tuple[int, ...]
    query: str


def test_call_passes_the_keys_the_function_names() -> None:
    def add(a: int, b: int) -> dict[str, Any]:
        return {"sum": a + b, "pair": (a, b)}

    outcome = run(effect.call(add), {"a": 2, "b": 3, "unused": "ignored"})
    assert outcome.ok and outcome.value == {"sum": 5, "pair": [2, 3]}


def test_call_a_function_that_takes_input_gets_the_whole_input() -> None:
    def whole(input: dict[str, Any]) -> Found:
        return Found(ids=(1, 2), query=input["query"])

    outcome = run(effect.call(whole), {"query": "crash", "limit": 3})
    assert outcome.value == {"ids": [1, 2], "query": "crash"}


def test_call_a_non_mapping_input_is_the_single_argument() -> None:
    outcome = run(effect.call(lambda n: n * 2), 21)
    assert outcome.ok and outcome.value == 42


def test_call_awaits_an_async_function() -> None:
    async def lookup(query: str) -> tuple[str, int]:
        await asyncio.sleep(0.01)
        return query.upper(), len(query)

    outcome = run(effect.call(lookup), {"query": "abc"})
    assert outcome.ok and outcome.value == ["ABC", 3]


def test_call_a_plain_function_runs_off_the_loop() -> None:
    loop_thread = threading.get_ident()

    def slow() -> int:
        time.sleep(0.3)
        return threading.get_ident()

    async def scenario() -> tuple[EffectOutcome, int]:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        tick_task = asyncio.create_task(ticker())
        slot = effect.call(slow)
        outcome = await run_effect(request(slot, {}), slot)
        tick_task.cancel()
        return outcome, ticks

    outcome, ticks = asyncio.run(scenario())
    assert outcome.ok and outcome.value != loop_thread
    assert ticks >= 10


def test_call_an_exception_is_an_error() -> None:
    def boom(query: str) -> None:
        raise ValueError(f"no index for {query}")

    outcome = run(effect.call(boom), {"query": "x"})
    assert not outcome.ok
    assert outcome.value["message"] == "ValueError: no index for x"
    assert outcome.value["type"] == "ValueError" and "no index for x" in outcome.value["traceback"]


def test_call_a_return_value_that_is_not_json_is_an_error() -> None:
    def odd() -> dict[str, Any]:
        return {"seen": {1, 2}}

    outcome = run(effect.call(odd), {})
    assert not outcome.ok
    assert "the return value['seen'] is a set, which is not JSON-serializable" in outcome.value["message"]


def test_call_runs_the_triage_workflows_search(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    issues = tmp_path / "issues.json"
    issues.write_text(json.dumps([{"id": 1, "title": "Crash on start"}, {"id": 2, "title": "Dark mode"}]))
    monkeypatch.setenv("TRIAGE_ISSUES", str(issues))
    outcome = run(effect.call(search_issues, idempotent=True), {"query": "crash when saving"})
    assert outcome.ok and outcome.value == [{"id": 1, "title": "Crash on start"}]


def test_a_call_without_its_slot_is_a_host_bug() -> None:
    with pytest.raises(ValueError, match="needs its slot"):
        asyncio.run(run_effect(request(effect.call(print), {})))
