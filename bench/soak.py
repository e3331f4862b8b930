"""The kill soak (`make soak`; a short version runs in CI through tests/e2e/test_soak.py).

PostgreSQL, Redis, 2 `jr2 web` and 3 `jr2 worker` processes on this machine. The same set of runs (notes, triage,
and the soak's own ledger, whose command Effect appends to a file) goes through the fleet twice: once undisturbed,
once while random workers (and a few web processes) are SIGKILLed at random moments and started again. Gates are
answered over HTTP through a random web process, after a random wait, so kills land at every point of a run's life.
Then every disturbed run must have ended as its undisturbed twin did, with the same output; every journal must be
whole (1..seq, nothing lost or doubled) and replay to the same end; every Gate answered exactly once; every ledger
line written exactly once; no non-idempotent Effect started twice by the engine; no relayed input left behind.

    python -m bench.soak                      # the full soak: 200 runs, 50 worker kills, 5 web kills
    python -m bench.soak --runs 24 --worker-kills 6 --web-kills 1 --answer-within 6

Needs DATABASE_URL (PostgreSQL) and REDIS_URL, e.g. through `scripts/services run python -m bench.soak`. It
makes a database of its own on that server and prints the figures, and a JSON report with --report FILE.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
#: The jr2 command under this very interpreter, so that Effects' argv (sys.executable) and the soak's replay agree.
JR2 = [sys.executable, "-m", "jr2.cli"]
LIVE = ("running", "waiting")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Proc:
    """One fleet process: `jr2 web` or `jr2 worker`."""

    role: str
    index: int
    popen: subprocess.Popen[bytes]
    port: int = 0

    @property
    def owner(self) -> str:
        return f"{socket.gethostname()}:worker:{self.popen.pid}"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@dataclass
class Fleet:
    folder: Path
    env: dict[str, str]
    webs: list[Proc] = field(default_factory=list)
    workers: list[Proc] = field(default_factory=list)

    def jr2(self, *args: str) -> str:
        done = subprocess.run([*JR2, *args], cwd=self.folder, env=self.env, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise RuntimeError(f"jr2 {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
        return done.stdout

    def _spawn(self, role: str, index: int, *args: str) -> subprocess.Popen[bytes]:
        log = open(self.folder / f"{role}-{index}.log", "ab")
        return subprocess.Popen(
            [*JR2, role, *args], cwd=self.folder, env=self.env, stdout=log, stderr=subprocess.STDOUT
        )

    def start_web(self, index: int, port: int | None = None) -> Proc:
        port = port or free_port()
        proc = Proc("web", index, self._spawn("web", index, "--port", str(port)), port)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if proc.popen.poll() is not None:
                raise RuntimeError(f"jr2 web {index} exited: see {self.folder}/web-{index}.log")
            try:
                if httpx.get(f"{proc.url}/api/openapi.json", timeout=1).status_code == 200:
                    return proc
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"jr2 web {index} did not answer within 60 s")

    def start_worker(self, index: int) -> Proc:
        return Proc("worker", index, self._spawn("worker", index))

    def ready(self, proc: Proc, timeout: float = 60) -> None:
        """Wait until a worker says it drives runs (it has checked the workflows and migrated)."""
        log = self.folder / f"worker-{proc.index}.log"
        deadline = time.monotonic() + timeout
        while f"host {socket.gethostname()}:worker:{proc.popen.pid} is driving" not in log.read_text():
            if proc.popen.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"jr2 worker {proc.index} did not start: see {log}")
            time.sleep(0.1)

    def start(self, webs: int, workers: int) -> None:
        self.webs = [self.start_web(i) for i in range(webs)]
        self.workers = [self.start_worker(i) for i in range(workers)]
        for worker in self.workers:
            self.ready(worker)

    def kill(self, proc: Proc) -> None:
        """SIGKILL, as a crash (the worker's Effect processes die with it: PR_SET_PDEATHSIG)."""
        proc.popen.send_signal(signal.SIGKILL)
        proc.popen.wait(timeout=30)

    def stop(self) -> None:
        for proc in self.webs + self.workers:
            if proc.popen.poll() is None:
                proc.popen.send_signal(signal.SIGTERM)
        for proc in self.webs + self.workers:
            try:
                proc.popen.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.popen.kill()


# -- the runs ---------------------------------------------------------------------------------------------------


def plan(count: int) -> list[tuple[str, str, dict[str, Any]]]:
    """(key, workflow, door input) for `count` runs: notes, triage and ledger in turn."""
    runs = []
    for i in range(count):
        kind = ("notes", "triage", "ledger")[i % 3]
        if kind == "notes":
            door: dict[str, Any] = {"changes": f"Change {i}: faster start-up\nChange {i}: an export button"}
        elif kind == "triage":
            door = {"title": f"Crash {i} when saving", "body": f"Saving file {i} crashes the app."}
        else:
            door = {"ticket": f"T-{i}", "amount": 100 + i}
        runs.append((f"{kind}-{i}", kind, door))
    return runs


def answer_for(workflow: str, key: str, gate: dict[str, Any], run: dict[str, Any]) -> dict[str, Any] | None:
    """What the person at a Gate answers; None to wait (the triage desk confirms once there is a proposal)."""
    accepts = {e.get("type") for e in gate.get("events", [])}
    if workflow == "notes" and "reply" in accepts:
        return {"type": "reply", "text": f"Readers of {key}"}
    if workflow == "triage":
        proposed = "proposed" in json.dumps(run.get("value"))
        return {"type": "confirm"} if proposed and "confirm" in accepts else None
    if workflow == "ledger" and "approve" in accepts:
        return {"type": "approve", "by": "soak"}
    return None


@dataclass
class Phase:
    name: str
    run_ids: dict[str, str] = field(default_factory=dict)  # key -> run id
    ended: dict[str, dict[str, Any]] = field(default_factory=dict)  # key -> final run JSON
    answers_sent: int = 0
    answer_errors: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0


class Soak:
    def __init__(self, fleet: Fleet, token: str, rng: random.Random, answer_within: float) -> None:
        self.fleet = fleet
        self.token = token
        self.rng = rng
        self.answer_within = answer_within
        self.lock = threading.Lock()

    def client(self) -> httpx.Client:
        web = self.rng.choice([w for w in self.fleet.webs if w.popen.poll() is None] or self.fleet.webs)
        return httpx.Client(base_url=web.url, headers={"Authorization": f"Bearer {self.token}"}, timeout=60)

    def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response | None:
        """One request through a random live web process; None when that process was killed under it."""
        with self.lock:
            client = self.client()
        try:
            with client:
                return client.request(method, path, **kwargs)
        except httpx.HTTPError:
            return None

    def live_runs(self) -> dict[str, int] | None:
        """Every live run's open Gate count, from the runs list (one request a page, not one a run)."""
        found: dict[str, int] = {}
        page = 1
        while True:
            response = self.call(
                "GET", "/api/runs", params={"status": "running,waiting", "page_size": 500, "page": page}
            )
            if response is None or response.status_code != 200:
                return None
            listing = response.json()
            found.update({r["id"]: r["open_gates"] for r in listing["results"]})
            if page >= listing["pages"]:
                return found
            page += 1

    def run_phase(self, phase: Phase, runs: list[tuple[str, str, dict[str, Any]]], timeout: float) -> None:
        started = time.monotonic()
        for key, workflow, door in runs:
            while True:
                response = self.call("POST", f"/api/workflows/{workflow}/runs", json=door)
                if response is not None and response.status_code == 201:
                    phase.run_ids[key] = response.json()["id"]
                    break
                if response is not None and response.status_code != 503:
                    raise RuntimeError(f"starting {key} failed: {response.status_code} {response.text}")
                time.sleep(0.2)
        due: dict[str, float] = {}
        workflows = {key: workflow for key, workflow, _ in runs}
        deadline = time.monotonic() + timeout
        while len(phase.ended) < len(runs):
            if time.monotonic() > deadline:
                left = sorted(set(phase.run_ids) - set(phase.ended))
                raise RuntimeError(
                    f"{phase.name}: {len(left)} runs did not end within {timeout:g} s: "
                    f"{[(k, phase.run_ids[k]) for k in left[:10]]}"
                )
            live = self.live_runs()
            if live is None:
                continue
            for key, run_id in phase.run_ids.items():
                if key in phase.ended or live.get(run_id, 1) == 0:
                    continue  # ended and recorded, or live with no open Gate
                response = self.call("GET", f"/api/runs/{run_id}")
                if response is None or response.status_code != 200:
                    continue
                run = response.json()
                if run["status"] not in LIVE:
                    phase.ended[key] = run
                    continue
                for gate in run.get("gates", []):
                    body = answer_for(workflows[key], key, gate, run)
                    if body is None:
                        continue
                    at = due.setdefault(
                        f"{run_id}/{gate['id']}", time.monotonic() + self.rng.uniform(0, self.answer_within)
                    )
                    if time.monotonic() < at:
                        continue
                    sent = self.call("POST", f"/api/runs/{run_id}/gates/{gate['id']}/events", json=body)
                    phase.answers_sent += 1
                    if sent is None:
                        phase.answer_errors["connection lost (web process killed)"] += 1
                    elif sent.status_code != 200:
                        phase.answer_errors[f"{sent.status_code}"] += 1
            time.sleep(0.2)
        phase.seconds = time.monotonic() - started


class Chaos(threading.Thread):
    """Kills random workers (and some web processes) at random moments, starting each again at once, and times
    how long the killed worker's runs waited for another worker to take them."""

    def __init__(self, soak: Soak, worker_kills: int, web_kills: int, period: float, database: Any) -> None:
        super().__init__(daemon=True)
        self.soak, self.worker_kills, self.web_kills, self.period = soak, worker_kills, web_kills, period
        self.database = database
        self.done = threading.Event()
        self.killed = Counter[str]()
        self.takeovers: list[float] = []
        self.orphans = 0

    def run(self) -> None:
        kills = ["worker"] * self.worker_kills + ["web"] * self.web_kills
        self.soak.rng.shuffle(kills)
        fleet = self.soak.fleet
        watchers = []
        for role in kills:
            if self.done.wait(self.soak.rng.uniform(0.2, 2 * self.period - 0.2)):
                return
            pool = fleet.workers if role == "worker" else fleet.webs
            with self.soak.lock:
                victim = self.soak.rng.choice(pool)
                held = self.database.held_by(victim.owner) if role == "worker" else []
                fleet.kill(victim)
                killed_at = time.monotonic()
                replacement = (
                    fleet.start_worker(victim.index) if role == "worker" else fleet.start_web(victim.index, victim.port)
                )
                pool[pool.index(victim)] = replacement
            self.killed[role] += 1
            if held:
                self.orphans += len(held)
                watcher = threading.Thread(target=self._watch, args=(victim.owner, held, killed_at), daemon=True)
                watcher.start()
                watchers.append(watcher)
        for watcher in watchers:
            watcher.join(timeout=120)

    def _watch(self, owner: str, held: list[str], killed_at: float) -> None:
        waiting = set(held)
        while waiting and not self.done.is_set():
            for run_id in list(waiting):
                if self.database.taken_over(run_id, owner):
                    self.takeovers.append(time.monotonic() - killed_at)
                    waiting.discard(run_id)
            time.sleep(0.05)


class Database:
    """The soak's direct reads of the fleet's database (through Django's ORM, configured for the soak's database)."""

    def __init__(self) -> None:
        from engine.models import Run

        self.Run = Run

    def held_by(self, owner: str) -> list[str]:
        from django.db import connection

        try:
            return list(self.Run.objects.filter(lease_owner=owner, status__in=LIVE).values_list("id", flat=True))
        finally:
            connection.close()

    def taken_over(self, run_id: str, owner: str) -> bool:
        from django.db import connection

        try:
            run = self.Run.objects.filter(id=run_id).values("lease_owner", "status").first()
        finally:
            connection.close()
        return run is None or run["status"] not in LIVE or run["lease_owner"] not in ("", owner)


# -- checks ---------------------------------------------------------------------------------------------------


def verify(calm: Phase, chaos: Phase, calm_ledger: Path, chaos_ledger: Path) -> dict[str, Any]:
    """Everything the soak promises, counted; `failures` lists what broke, by run."""
    from django.db.models import Count, Max, Min

    from engine.core.journal.replay import replay
    from engine.models import EffectRecord, JournalEntry, Run, RunInput
    from engine.runtime.registry import workflows

    machines = workflows().machines
    failures: list[str] = []
    counts: Counter[str] = Counter()
    for key, run_id in chaos.run_ids.items():
        twin = calm.ended[key]
        got = chaos.ended[key]
        if (got["status"], got.get("output")) != (twin["status"], twin.get("output")):
            failures.append(
                f"{key} ({run_id}): ended {got['status']} {got.get('output')!r}, undisturbed "
                f"{twin['status']} {twin.get('output')!r}"
            )
    for phase in (calm, chaos):
        ids = list(phase.run_ids.values())
        rows = {
            r["run"]: r
            for r in JournalEntry.objects.filter(run_id__in=ids)
            .values("run")
            .annotate(n=Count("id"), low=Min("seq"), high=Max("seq"))
        }
        for run in Run.objects.filter(id__in=ids):
            row = rows.get(run.id, {"n": 0, "low": None, "high": None})
            counts["journal entries"] += row["n"]
            if not (row["n"] == run.seq and row["low"] == 1 and row["high"] == run.seq):
                failures.append(
                    f"{phase.name} run {run.id}: journal holds {row['n']} entries for seq {run.seq} "
                    f"(from {row['low']} to {row['high']})"
                )
            journal = [e.entry for e in JournalEntry.objects.filter(run_id=run.id).order_by("seq")]
            report = replay(machines[run.workflow], journal)
            if not report.same:
                failures.append(f"{phase.name} run {run.id}: the journal does not replay: {report.message}")
            gates = Counter(str(e.get("gate")) for e in journal if e.get("kind") == "gate")
            counts["gate answers"] += sum(gates.values())
            doubled = [g for g, n in gates.items() if n != 1]
            if doubled:
                failures.append(f"{phase.name} run {run.id}: Gates answered other than once: {dict(gates)}")
        again = EffectRecord.objects.filter(run_id__in=ids, idempotent=False, attempts__gt=1).count()
        if again:
            failures.append(f"{phase.name}: {again} non-idempotent Effects were started again by the engine")
        counts[f"{phase.name}: non-idempotent Effects started again"] = again
    tickets = {f"T-{key.split('-')[1]}" for key in chaos.run_ids if key.startswith("ledger-")}
    counts["ledger lines"] = 0
    for phase, ledger in ((calm, calm_ledger), (chaos, chaos_ledger)):
        lines = ledger.read_text().splitlines() if ledger.exists() else []
        per_ticket = Counter(line.split(" ")[0] for line in lines)
        for ticket in sorted(tickets):
            if per_ticket[ticket] != 1:
                failures.append(f"{phase.name}: ledger ticket {ticket}: {per_ticket[ticket]} lines, want 1")
        counts["ledger lines"] += len(lines)
    pending = RunInput.objects.filter(status="pending").count()
    if pending:
        failures.append(f"{pending} relayed inputs were left pending")
    counts["relayed inputs delivered"] = RunInput.objects.filter(status="delivered").count()
    counts["relayed inputs refused"] = RunInput.objects.filter(status="refused").count()
    return {"failures": failures, "counts": dict(counts)}


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--worker-kills", type=int, default=50)
    parser.add_argument("--web-kills", type=int, default=5)
    parser.add_argument("--webs", type=int, default=2)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--lease", type=float, default=3.0, help="JR2_LEASE_SECONDS of the workers")
    parser.add_argument(
        "--answer-within",
        type=float,
        default=45.0,
        help="each Gate is answered after a random wait up to this many seconds",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--report", help="write the report as JSON here too")
    parser.add_argument("--keep", action="store_true", help="keep the soak's folder (logs, ledger)")
    args = parser.parse_args(argv)
    url, redis_url = os.environ.get("DATABASE_URL", ""), os.environ.get("REDIS_URL", "")
    if not url.startswith(("postgres://", "postgresql://")) or not redis_url:
        raise SystemExit(
            "bench.soak needs DATABASE_URL (PostgreSQL) and REDIS_URL: run it as "
            "`scripts/services run python -m bench.soak` (or `make soak`)"
        )
    sys.path.insert(0, str(ROOT))
    from tests.databases import fresh_database_url

    database_url = fresh_database_url()
    assert database_url is not None
    folder = Path(tempfile.mkdtemp(prefix="jr2-soak-"))
    workflows = folder / "workflows"
    shutil.copytree(ROOT / "workflows", workflows, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy(ROOT / "bench" / "soak_workflows" / "ledger.py", workflows / "ledger.py")
    ledger_file = folder / "ledger.txt"
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "JR2_HOST_ID")}
    env.update(
        {
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "JR2_WORKFLOWS": str(workflows),
            "JR2_SCRIPTED": "1",
            "JR2_LEASE_SECONDS": str(args.lease),
            "JR2_SCAN_SECONDS": "0.25",
            "JR2_SOAK_LEDGER": str(ledger_file),
            "JR2_DRAIN_SECONDS": "5",
            "PYTHONUNBUFFERED": "1",
            "JR2_RELAY_WAIT": "60",
        }
    )
    os.environ.update(
        {
            "DATABASE_URL": database_url,
            "JR2_WORKFLOWS": str(workflows),
            "JR2_SOAK_LEDGER": str(ledger_file),
            "DJANGO_SETTINGS_MODULE": "jr2.settings",
        }
    )
    fleet = Fleet(folder, env)
    fleet.jr2("check")
    subprocess.run([sys.executable, str(ROOT / "manage.py"), "migrate", "-v", "0"], env=env, check=True)
    token = fleet.jr2("token", "create", "soak", "--create-user").strip()
    import django

    django.setup()
    rng = random.Random(args.seed)
    runs = plan(args.runs)
    say = lambda line: print(line, flush=True)
    report: dict[str, Any] = {"runs": args.runs, "webs": args.webs, "workers": args.workers, "lease": args.lease}
    try:
        fleet.start(args.webs, args.workers)
        soak = Soak(fleet, token, rng, args.answer_within)
        calm = Phase("undisturbed")
        say(f"soak: {args.runs} runs on {args.webs} web and {args.workers} worker processes, undisturbed")
        soak.run_phase(calm, runs, args.timeout)
        say(f"soak: undisturbed phase done in {calm.seconds:.1f} s")
        # Each phase posts to a ledger of its own: in one shared file, a disturbed run whose post was interrupted
        # would find the undisturbed twin's line for the same ticket when it reconciles, and count it as its own.
        calm_ledger = ledger_file.with_name("ledger-undisturbed.txt")
        if ledger_file.exists():
            ledger_file.rename(calm_ledger)
        chaos = Phase("disturbed")
        killer = Chaos(
            soak,
            args.worker_kills,
            args.web_kills,
            period=max(args.answer_within, 5) / max(1, args.worker_kills + args.web_kills) * 1.5,
            database=Database(),
        )
        say(f"soak: the same runs again, with {args.worker_kills} worker and {args.web_kills} web SIGKILLs")
        killer.start()
        soak.run_phase(chaos, runs, args.timeout)
        killer.join(timeout=args.timeout)
        killer.done.set()
        say(f"soak: disturbed phase done in {chaos.seconds:.1f} s; killed {dict(killer.killed)}")
        checked = verify(calm, chaos, calm_ledger, ledger_file)
        report.update(
            {
                "undisturbed_seconds": round(calm.seconds, 1),
                "disturbed_seconds": round(chaos.seconds, 1),
                "killed": dict(killer.killed),
                "orphaned_runs": killer.orphans,
                "takeover_p50": round(percentile(killer.takeovers, 50), 2),
                "takeover_p95": round(percentile(killer.takeovers, 95), 2),
                "takeover_max": round(max(killer.takeovers), 2) if killer.takeovers else None,
                "answers_sent": chaos.answers_sent,
                "answer_errors": dict(chaos.answer_errors),
                "statuses": dict(Counter(r["status"] for r in chaos.ended.values())),
                **checked,
            }
        )
    finally:
        fleet.stop()
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    say(json.dumps(report, indent=2))
    if args.report:
        Path(args.report).write_text(json.dumps(report, indent=2) + "\n")
    return report


if __name__ == "__main__":
    result = main()
    sys.exit(1 if result["failures"] else 0)
