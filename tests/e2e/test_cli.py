"""The command line against a live server: `jr2 run`, `runs`, `status`, `send`, `cancel` and `replay`, each run as
the installed console script in a subprocess (JR2_URL and JR2_TOKEN point it at the module's `jr2 up`), with what
they print and their exit codes checked."""

from __future__ import annotations

import json
import os
import queue
import re
import shlex
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from engine.cli.client import Client, CliError
from tests.live_server import LiveServer, free_port, jr2_script

CHANGES = "One fix.\nTwo fix."
NOTES_INPUT = json.dumps({"changes": CHANGES})
SEND_REPLY = '--gate writing.asking --event reply --input \'{"text": "..."}\''


class Following:
    """`jr2 run ...` in the background: its stderr read line by line as it comes."""

    def __init__(self, live: LiveServer, *args: str) -> None:
        # Ctrl-C as from a terminal: a suite run as a background job ignores SIGINT, and a child would inherit that.
        self.process = subprocess.Popen(
            [jr2_script(), "run", *args],
            cwd=live.folder,
            env=live.env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def until(self, pattern: str, timeout: float = 30) -> str:
        """Read lines until one matches; that line."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._queue.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no line matching {pattern!r} within {timeout} s: {self.lines}") from None
            if line is None:
                raise AssertionError(f"jr2 run ended before a line matching {pattern!r}: {self.lines}")
            self.lines.append(line)
            if re.search(pattern, line):
                return line

    def finish(self, timeout: float = 30) -> tuple[int, str]:
        """Its exit code and stdout, once it ends; every stderr line is in `lines`."""
        self.process.wait(timeout=timeout)
        assert self.process.stdout is not None
        out = self.process.stdout.read()
        self._reader.join(timeout=5)
        while True:
            line = self._queue.get_nowait() if not self._queue.empty() else None
            if line is None:
                break
            self.lines.append(line)
        return self.process.returncode, out

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


def reply_ends_the_run(source: str) -> str:
    """notes.py edited so that its shape changes: the editor's reply ends the run."""
    edited = re.sub(r'"reply": \{(\s*)"target": "drafting"', r'"reply": {\1"target": "#notes.published"', source)
    assert edited != source
    return edited


def waiting_notes_run(live: LiveServer) -> str:
    return live.start_run("notes", {"changes": CHANGES}, "waiting")


def only_line(text: str) -> str:
    lines = text.splitlines()
    assert len(lines) == 1, f"one line expected: {lines}"
    return lines[0]


# -- jr2 run ------------------------------------------------------------------------------------------------------


def test_run_follows_a_notes_run_through_its_gate_to_the_end(live: LiveServer) -> None:
    follow = Following(live, "notes", "--input", NOTES_INPUT)
    try:
        head = follow.until(r"^jr2 run: started run ")
        run_id = re.match(
            r"jr2 run: started run (\w+) of notes; following it \(Ctrl-C stops following, the run goes "
            r"on\)$",
            head,
        ).group(1)  # type: ignore[union-attr]
        command = follow.until(r"^  jr2 send ")
        assert command == f"  jr2 send {run_id} {SEND_REPLY}"
        # answer it as the line says, with the placeholder filled in
        args = shlex.split(command.replace('"..."', '"Ops people"'))
        sent = live.jr2(*args[1:])
        assert sent.returncode == 0, sent.stderr
        assert json.loads(sent.stdout) == {"outcome": "delivered", "run": run_id, "status": sent_stdout_status(sent)}
        code, out = follow.finish()
    finally:
        follow.kill()
    assert code == 0, follow.lines
    final = json.loads(out)
    assert final == {
        "id": run_id,
        "workflow": "notes",
        "status": "done",
        "output": {"notes": "## What's new\n\n- One fix.\n- Two fix.\n\n_Written for: Ops people_"},
        "reason": "",
    }
    lines = follow.lines
    expected_in_order = [
        f"jr2 run: started run {run_id} of notes; following it (Ctrl-C stops following, the run goes on)",
        "Turn turn-1: writer starts in notes.writing [script/notes.writer (scripted stand-in for "
        "anthropic/claude-haiku-5-5)]",
        'writer picked ask {question: "Who reads these notes, and what should t…"}: outstanding',
        "state: notes.writing.asking",
        'Gate writing.asking is open (question: "Who reads these notes, and what should they know first?"); answer '
        "it with:",
        f"  jr2 send {run_id} {SEND_REPLY}",
        "status: waiting",
        'the Gate writing.asking got reply {text: "Ops people"} from e2e (from the CLI)',
        'writer picked done {notes: "## What\'s new\\n\\n- One fix.\\n- Two fix.\\n\\n_W…"}: ended',
        "state: notes.published",
        "Turn turn-1 of writer ended",
        "Gate writing.asking closed",
        "status: done",
    ]
    positions = [lines.index(line) if line in lines else -1 for line in expected_in_order]
    assert -1 not in positions, "\n".join(lines)
    assert positions == sorted(positions), "\n".join(lines)
    assert not any("advance" in line or "passed" in line for line in lines)  # time passing is not news


def sent_stdout_status(sent: subprocess.CompletedProcess[str]) -> str:
    status = json.loads(sent.stdout)["status"]
    assert status in ("running", "waiting", "done")
    return str(status)


def test_run_exits_3_when_the_run_it_follows_is_cancelled(live: LiveServer) -> None:
    follow = Following(live, "notes", "--input", NOTES_INPUT)
    try:
        run_id = follow.until(r"^jr2 run: started run ").split()[4]
        follow.until(r"^  jr2 send ")
        cancelled = live.jr2("cancel", run_id[:6])
        assert cancelled.returncode == 0, cancelled.stderr
        assert json.loads(cancelled.stdout) == {"outcome": "cancelled", "run": run_id, "status": "cancelled"}
        code, out = follow.finish()
    finally:
        follow.kill()
    assert code == 3, follow.lines
    assert json.loads(out) == {"id": run_id, "workflow": "notes", "status": "cancelled", "output": None, "reason": ""}
    assert follow.lines[-4:] == [
        "the run was cancelled by e2e (from the CLI)",
        "Turn turn-1 of writer ended",
        "Gate writing.asking closed",
        "status: cancelled",
    ]


def test_while_following_ctrl_c_is_taken_between_polls_and_a_second_one_at_once() -> None:
    """Never inside an HTTP request (an interrupted request could leave the client's pool locked and `jr2 run`
    hanging on its way out), unless asked twice."""
    from engine.cli.follow import _ctrl_c_between_polls

    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # as Python sets it up under a terminal
    try:
        with _ctrl_c_between_polls() as asked:
            os.kill(os.getpid(), signal.SIGINT)
            assert asked.wait(5), "the first Ctrl-C was not taken"
            with pytest.raises(KeyboardInterrupt):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(5)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # started with Ctrl-C ignored (nohup, a background job)
        with _ctrl_c_between_polls() as asked:
            os.kill(os.getpid(), signal.SIGINT)
            assert not asked.wait(0.2), "a process that ignores Ctrl-C must go on ignoring it"
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)


def test_ctrl_c_stops_following_and_the_run_goes_on(live: LiveServer) -> None:
    follow = Following(live, "notes", "--input", NOTES_INPUT)
    try:
        run_id = follow.until(r"^jr2 run: started run ").split()[4]
        follow.until(r"^status: waiting")
        follow.process.send_signal(signal.SIGINT)
        code, out = follow.finish()
    finally:
        follow.kill()
    assert code == 130
    assert out == ""
    assert follow.lines[-1] == (
        f"jr2 run: stopped following run {run_id}; it goes on. Look again with `jr2 status {run_id}`"
    )
    assert "Traceback" not in "\n".join(follow.lines)
    assert live.wait_for(run_id, "waiting")["status"] == "waiting"


def test_run_detach_prints_the_created_run_and_exits_0(live: LiveServer) -> None:
    proc = live.jr2("run", "notes", "--input", NOTES_INPUT, "--detach")
    assert proc.returncode == 0, proc.stderr
    created = json.loads(proc.stdout)
    assert set(created) == {"id", "workflow", "status", "url"}
    assert created["workflow"] == "notes" and created["url"] == f"/api/runs/{created['id']}"
    assert live.wait_for(created["id"], "waiting")["input"] == {"changes": CHANGES}


def test_run_input_errors_are_one_line_and_exit_2(live: LiveServer, tmp_path: Path) -> None:
    with live.client() as client:
        before = client.get("/api/runs").json()["count"]
    bad = live.jr2("run", "notes", "--input", "{changes: 1}")
    assert bad.returncode == 2 and bad.stdout == ""
    assert only_line(bad.stderr).startswith(
        "jr2 run: --input is not JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1)): "
    )
    door = live.jr2("run", "notes", "--input", '{"change": "x"}')
    assert door.returncode == 2 and door.stdout == ""
    assert only_line(door.stderr) == 'jr2 run: 400: the input of workflow "notes" is not valid: changes: Field required'
    unknown = live.jr2("run", "nope", "--input", "{}")
    assert unknown.returncode == 2
    assert (
        only_line(unknown.stderr)
        == 'jr2 run: 404: no workflow "nope" (workflows: code_review, code_review_harness, escalation, notes, release, '
        "triage)"
    )
    with live.client() as client:
        assert client.get("/api/runs").json()["count"] == before  # nothing was started
    # @FILE reads the input from a file
    (tmp_path / "input.json").write_text(NOTES_INPUT)
    from_file = live.jr2("run", "notes", "--input", f"@{tmp_path / 'input.json'}", "--detach")
    assert from_file.returncode == 0, from_file.stderr
    missing = live.jr2("run", "notes", "--input", f"@{tmp_path / 'nope.json'}")
    assert missing.returncode == 2
    assert only_line(missing.stderr) == f"jr2 run: --input @{tmp_path / 'nope.json'}: No such file or directory"


# -- jr2 runs, status ---------------------------------------------------------------------------------------------


def test_runs_lists_a_table_and_json(live: LiveServer) -> None:
    run_id = waiting_notes_run(live)
    triage_id = live.start_run("triage", {"title": "Crash on save", "body": "It crashes."})
    live.wait_for(triage_id, "waiting")
    table = live.jr2("runs")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["ID", "WORKFLOW", "STATUS", "GATES", "AGE"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows[run_id][1:4] == ["notes", "waiting", "1"]
    assert re.fullmatch(r"\d+[smhd]", rows[run_id][4])
    assert lines[1].split()[0] == triage_id  # newest first
    only = live.jr2("runs", "--workflow", "triage", "--json")
    assert only.returncode == 0
    page = json.loads(only.stdout)
    assert {r["workflow"] for r in page["results"]} == {"triage"} and page["page"] == 1
    bad = live.jr2("runs", "--status", "sleeping")
    assert bad.returncode == 2
    assert only_line(bad.stderr).startswith(
        "jr2 runs: 400: status: unknown status sleeping (statuses: running, waiting, "
    )


def test_status_by_prefix_shows_state_gates_and_turns(live: LiveServer) -> None:
    run_id = waiting_notes_run(live)
    proc = live.jr2("status", run_id[:5])
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"run {run_id}: workflow notes, waiting (scripted Agents)"
    assert "state: notes.writing.asking" in lines
    assert f"  jr2 send {run_id} {SEND_REPLY}" in lines
    assert (
        "Turn turn-1: writer in notes.writing [script/notes.writer (scripted stand-in for "
        "anthropic/claude-haiku-5-5)]: waiting on its pick ask (pick-1)"
    ) in lines
    raw = live.jr2("status", run_id, "--json")
    assert raw.returncode == 0
    assert json.loads(raw.stdout)["gates"][0]["id"] == "writing.asking"
    short = live.jr2("status", run_id[:3])
    assert short.returncode == 2
    assert only_line(short.stderr) == (
        f"jr2 status: a run id or a prefix of at least 4 characters is needed; got {run_id[:3]!r}"
    )
    none = live.jr2("status", "zzzzzzzz")
    assert none.returncode == 2
    assert only_line(none.stderr) == "jr2 status: no run id starts with 'zzzzzzzz' (see `jr2 runs`)"


def test_status_of_a_finished_run_shows_the_output_and_exits_by_status(live: LiveServer) -> None:
    run_id = waiting_notes_run(live)
    with live.client() as client:
        assert (
            client.post(
                f"/api/runs/{run_id}/gates/writing.asking/events", json={"type": "reply", "text": "Ops"}
            ).status_code
            == 200
        )
    live.wait_for(run_id, "done")
    done = live.jr2("status", run_id)
    assert done.returncode == 0
    assert "state: notes.published" in done.stdout.splitlines()
    assert 'output: {"notes": "## What\'s new\\n\\n- One fix.\\n- Two fix.\\n\\n_Written for: Ops_"}' in done.stdout
    other = waiting_notes_run(live)
    assert live.jr2("cancel", other).returncode == 0
    cancelled = live.jr2("status", other)
    assert cancelled.returncode == 3
    assert f"run {other}: workflow notes, cancelled (scripted Agents)" in cancelled.stdout


# -- jr2 send, cancel ------------------------------------------------------------------------------------------------


def test_send_delivers_and_its_errors_are_the_apis_detail_on_one_line(live: LiveServer) -> None:
    run_id = waiting_notes_run(live)
    prefix = run_id[:4]
    unknown = live.jr2("send", prefix, "--gate", "nope", "--event", "reply", "--input", '{"text": "x"}')
    assert unknown.returncode == 2 and unknown.stdout == ""
    assert only_line(unknown.stderr) == (
        f'jr2 send: 404: run {run_id} has no open Gate "nope" (open Gates: writing.asking)'
    )
    invalid = live.jr2("send", prefix, "--gate", "writing.asking", "--event", "reply", "--input", '{"txt": "x"}')
    assert invalid.returncode == 2
    assert only_line(invalid.stderr).startswith('jr2 send: 400: the input of "reply" is not valid: ')
    assert "text" in invalid.stderr and "Field required" in invalid.stderr
    not_object = live.jr2("send", prefix, "--gate", "writing.asking", "--event", "reply", "--input", '["x"]')
    assert not_object.returncode == 2
    assert only_line(not_object.stderr) == (
        'jr2 send: --input must be a JSON object, like \'{"text": "..."}\'; got list'
    )
    good = live.jr2("send", prefix, "--gate", "writing.asking", "--event", "reply", "--input", '{"text": "Ops"}')
    assert good.returncode == 0, good.stderr
    assert json.loads(good.stdout)["outcome"] == "delivered"
    live.wait_for(run_id, "done")
    late = live.jr2("send", run_id, "--gate", "writing.asking", "--event", "reply", "--input", '{"text": "Ops"}')
    assert late.returncode == 2
    assert only_line(late.stderr) == f"jr2 send: 409: run {run_id} has ended (done); its Gates are closed"


def test_cancel_then_cancel_again(live: LiveServer) -> None:
    run_id = waiting_notes_run(live)
    first = live.jr2("cancel", run_id[:8])
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout) == {"outcome": "cancelled", "run": run_id, "status": "cancelled"}
    again = live.jr2("cancel", run_id)
    assert again.returncode == 2
    assert only_line(again.stderr) == f"jr2 cancel: 409: run {run_id} has already ended (cancelled)"


# -- tokens and servers ----------------------------------------------------------------------------------------------


def test_a_bad_or_missing_token_is_the_401_line(live: LiveServer) -> None:
    bad = live.jr2("runs", env={"JR2_TOKEN": "jr2_not-a-token"})
    assert bad.returncode == 2 and bad.stdout == ""
    assert only_line(bad.stderr) == (
        "jr2 runs: 401: a valid API token is needed: send `Authorization: Bearer "
        "<token>` (create one with `jr2 token create <username>`)"
    )
    flag = live.jr2("status", "abcd", "--token", "jr2_not-a-token")
    assert flag.returncode == 2 and flag.stderr.startswith("jr2 status: 401: ")
    missing = live.jr2("run", "notes", "--input", NOTES_INPUT, env={"JR2_TOKEN": ""})
    assert missing.returncode == 2
    assert only_line(missing.stderr).endswith("(no token was given: pass --token or set JR2_TOKEN)")


def test_a_server_that_is_down_is_named_with_how_to_start_it(live: LiveServer) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    for args in (("runs",), ("status", "abcd"), ("run", "notes", "--input", NOTES_INPUT), ("cancel", "abcd")):
        proc = live.jr2(*args, env={"JR2_URL": url})
        assert proc.returncode == 2, args
        line = only_line(proc.stderr)
        assert line.startswith(f"jr2 {args[0]}: the server is not reachable at {url} ("), line
        assert line.endswith("); start it with `jr2 up`, or point --url / JR2_URL at it"), line
    flag = live.jr2("runs", "--url", url + "/")
    assert flag.returncode == 2 and f"not reachable at {url} (" in flag.stderr


def test_several_runs_for_one_prefix_are_listed() -> None:
    """In-process, over a stand-in transport: two runs share a prefix (random ids rarely do on a live server)."""
    rows = [
        {"id": "abcd2345xy", "workflow": "notes", "status": "done"},
        {"id": "abcd9876zz", "workflow": "triage", "status": "waiting"},
    ]

    def answer(request: httpx.Request) -> httpx.Response:
        found = [row for row in rows if row["id"].startswith(request.url.params["prefix"])]
        return httpx.Response(200, json={"count": len(found), "page": 1, "pages": 1, "results": found})

    api = Client("status", "http://jr2.test", "t", transport=httpx.MockTransport(answer))
    with pytest.raises(CliError) as err:
        api.resolve("abcd")
    assert err.value.code == 2
    assert err.value.message == (
        "jr2 status: 2 runs start with 'abcd': abcd2345xy (notes, done), abcd9876zz "
        "(triage, waiting); give more characters"
    )
    assert api.resolve("abcd9") == "abcd9876zz"


def test_an_error_that_is_not_json_is_still_one_line() -> None:
    api = Client(
        "runs",
        "http://jr2.test",
        "t",
        transport=httpx.MockTransport(
            lambda request: httpx.Response(502, text="<html>\n<body>Bad gateway</body>\n</html>")
        ),
    )
    with pytest.raises(CliError) as err:
        api.get("/api/runs")
    assert err.value.message == "jr2 runs: 502: <html>; <body>Bad gateway</body>; </html>"


# -- jr2 replay ------------------------------------------------------------------------------------------------------


def finished_notes_run(live: LiveServer, reply: str = "Ops") -> str:
    run_id = waiting_notes_run(live)
    with live.client() as client:
        assert (
            client.post(
                f"/api/runs/{run_id}/gates/writing.asking/events", json={"type": "reply", "text": reply}
            ).status_code
            == 200
        )
    live.wait_for(run_id, "done")
    return run_id


def steps(entries: list[dict[str, Any]]) -> int:
    return sum(1 for e in entries if e["kind"] != "effect_started")


def test_replay_of_a_finished_run_is_the_same(live: LiveServer) -> None:
    run_id = finished_notes_run(live)
    n = steps(live.journal(run_id))
    proc = live.jr2("replay", run_id[:6])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"same ({n} steps)\n"
    assert only_line(proc.stderr).startswith(
        f"jr2 replay: run {run_id} (notes, done, {n} journal entries) against "
        f"{live.workflows / 'notes.py'} (the same shape "
    )
    through_api = live.jr2("replay", run_id, "--url", live.url)
    assert through_api.returncode == 0, through_api.stderr
    assert through_api.stdout == f"same ({n} steps)\n"
    triage_id = live.start_run("triage", {"title": "Crash on save", "body": "It crashes."})
    live.wait_for(triage_id, "waiting")
    triage = live.jr2("replay", triage_id)  # an Effect's result and its start mark, a live run
    assert triage.returncode == 0, triage.stdout + triage.stderr
    assert triage.stdout.startswith("same (")


def test_replay_against_an_edited_guard_names_the_first_divergence(live: LiveServer, tmp_path: Path) -> None:
    run_id = finished_notes_run(live)
    entries = live.journal(run_id)
    gate = next(e["seq"] for e in entries if e["kind"] == "gate")
    done = next(e["seq"] for e in entries if e["kind"] == "pick" and e["entry"]["event"] == "done")
    source = (live.workflows / "notes.py").read_text()
    stricter = source.replace('context["replies"] > 0', 'context["replies"] > 1')
    assert stricter != source
    (live.workflows / "notes.py").write_text(stricter)  # the server loaded it already; replay reads the folder
    try:
        proc = live.jr2("replay", run_id)
    finally:
        (live.workflows / "notes.py").write_text(source)
    assert proc.returncode == 1, proc.stderr
    line = only_line(proc.stdout)
    assert line.startswith(
        f'step {gate}: the Gate writing.asking got reply {{text: "Ops"}} from e2e (through the API): now produces '
        "different "
        'outputs (now: the Gate writing.asking closes; the pick ask is answered "The editor '
        'replied: Ops" (allowed then: ask); then in notes.writing.drafting)'
    ), line
    assert line.endswith(
        f"; later, step {done}: writer picked done {{notes: \"## What's new\\n\\n- One fix.\\n- Two "
        'fix.\\n\\n_W…"}: now unmoved: not allowed in notes.writing.drafting (allowed now: '
        "ask)"
    ), line
    assert "(the same shape " in proc.stderr  # a guard is not part of the shape


def test_replay_of_a_changed_shape_needs_against_current(live: LiveServer, tmp_path: Path) -> None:
    run_id = finished_notes_run(live)
    entries = live.journal(run_id)
    gate = next(e["seq"] for e in entries if e["kind"] == "gate")
    edited = tmp_path / "workflows"
    shutil.copytree(live.workflows, edited, ignore=shutil.ignore_patterns("__pycache__"))
    source = (edited / "notes.py").read_text()
    (edited / "notes.py").write_text(reply_ends_the_run(source))
    with live.client() as client:
        recorded = client.get(f"/api/runs/{run_id}").json()["digest"]
    refused = live.jr2("replay", run_id, "--workflows", str(edited))
    assert refused.returncode == 1
    line = only_line(refused.stdout)
    match = re.fullmatch(
        rf'run {run_id} was written under workflow "notes" with shape {recorded[:12]}, but notes.py '
        r"now has shape ([0-9a-f]{12}): not replayed\. Pass --against-current to replay it against "
        r"the current Machine and see where it diverges",
        line,
    )
    assert match and match.group(1) != recorded[:12], line
    replayed = live.jr2("replay", run_id, "--workflows", str(edited), "--against-current")
    assert replayed.returncode == 1, replayed.stderr
    line = only_line(replayed.stdout)
    assert line.startswith(
        f'step {gate}: the Gate writing.asking got reply {{text: "Ops"}} from e2e (through the API): now produces '
        "different "
        "outputs (now: the Gate writing.asking closes; writer's Turn ends; "
    ), line
    assert "the run ends done" in line and "then in notes.published" in line
    assert f"its shape changed: the run's {recorded[:12]}, now {match.group(1)}" in replayed.stderr


def test_replay_errors_exit_2(live: LiveServer, tmp_path: Path) -> None:
    missing = live.jr2("replay", "zzzzzzzz")
    assert missing.returncode == 2
    assert only_line(missing.stderr) == (
        f"jr2 replay: no run id starts with 'zzzzzzzz' in the database ({live.database_name})"
    )
    run_id = finished_notes_run(live)
    elsewhere = tmp_path / "empty"
    elsewhere.mkdir()
    gone = live.jr2("replay", run_id, "--workflows", str(elsewhere))
    assert gone.returncode == 2
    assert only_line(gone.stderr) == (
        f'jr2 replay: run {run_id} is a run of workflow "notes", which is not in {elsewhere} (workflows: none)'
    )


FAILING = '''"""A workflow that fails as it starts: for the command line's exit code 1."""
from engine import fail, jr2_setup

machine = jr2_setup(events=[], actors={"fail": fail()}).create_machine({
    "id": "failing",
    "initial": "broken",
    "states": {"broken": {"invoke": {"src": "fail", "input": {"reason": "the test says so"}}}},
})
'''


def test_a_drifted_run_exits_4_and_a_failed_one_1(fresh: LiveServer) -> None:
    """The workflow changed shape while a run waited: the restarted server marks it drifted; `jr2 status` exits 4
    with the reason, and `jr2 replay` says why it does not replay until asked to replay against the current one.
    A workflow added meanwhile fails as it starts: `jr2 run` exits 1 with the reason."""
    run_id = waiting_notes_run(fresh)
    fresh.stop()
    notes = fresh.workflows / "notes.py"
    notes.write_text(reply_ends_the_run(notes.read_text()))
    (fresh.workflows / "failing.py").write_text(FAILING)
    fresh.start()
    failed = fresh.jr2("run", "failing")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    final = json.loads(failed.stdout)
    assert final["status"] == "failed" and final["reason"] == "the test says so"
    assert failed.stderr.splitlines()[-1] == "status: failed: the test says so"
    fresh.wait_for(run_id, "drifted")
    status = fresh.jr2("status", run_id)
    assert status.returncode == 4, status.stdout + status.stderr
    assert status.stdout.splitlines()[0] == f"run {run_id}: workflow notes, drifted (scripted Agents)"
    assert 'reason: the workflow "notes" changed shape since the run was written' in status.stdout
    refused = fresh.jr2("replay", run_id)
    assert refused.returncode == 1
    assert "not replayed. Pass --against-current" in refused.stdout
    replayed = fresh.jr2("replay", run_id, "--against-current")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr  # nothing it recorded reached the edit
    assert replayed.stdout.startswith("same (")
