"""Runs in every status for the Console's page tests, made by a real Host on the test database, users with the
Console's groups and clients logged in as them, the workflows folder with the ledger, and reading the graph's SVG."""

from __future__ import annotations

import asyncio
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import AsyncClient, Client
from pydantic import BaseModel

from engine import define_event
from engine.models import Run
from engine.runtime.host import Host
from tests.live_server import copy_workflows
from tests.runtime.hosting import status, until
from workflows import code_review, notes, triage

WORKFLOWS = {"notes": notes.machine, "code_review": code_review.machine, "triage": triage.machine}
NOTES_DOOR = {"changes": "Faster start-up.\nA new export button."}
SVG = "{http://www.w3.org/2000/svg}"


async def _until(host: Host, run_id: str, *statuses: str, timeout: float = 90.0) -> None:
    """Until the run has one of `statuses`. The deadline is long: code_review starts three real Python processes
    (its checkout and two test runs), which take a while on a loaded machine."""
    await until(host, status(run_id, *statuses), timeout=timeout, what=f"run {run_id} to reach {statuses}")


def make_runs(code_review: bool = False) -> dict[str, str]:
    """One run per status the pages show: waiting (notes at its Gate), done, cancelled, failed (a fault), triage
    waiting at its desk, and with `code_review`, a code_review run done (with Effects: three real Python processes,
    so only the tests that read it pay for it)."""
    made: dict[str, str] = {}

    async def main() -> None:
        host = Host(WORKFLOWS, owner="console-tests")
        await host.start()
        try:
            made["waiting"] = await host.start_run("notes", NOTES_DOOR)
            await _until(host, made["waiting"], "waiting")
            made["done"] = await host.start_run("notes", NOTES_DOOR)
            await _until(host, made["done"], "waiting")
            await host.deliver(made["done"], "gate", gate="writing.asking", event="reply", params={"text": "Admins"})
            await _until(host, made["done"], "done")
            made["cancelled"] = await host.start_run("notes", NOTES_DOOR)
            await _until(host, made["cancelled"], "waiting")
            await host.cancel(made["cancelled"])
            await _until(host, made["cancelled"], "cancelled")
            made["failed"] = await host.start_run("notes", NOTES_DOOR)
            await _until(host, made["failed"], "waiting")
            await host.deliver(made["failed"], "fault", agent="writer", reason="the model stopped answering")
            await _until(host, made["failed"], "failed")
            made["triage"] = await host.start_run("triage", {"title": "Export crash", "body": "It crashes."})
            await _until(host, made["triage"], "waiting")
            if code_review:
                made["code_review"] = await host.start_run("code_review", {"task": "Add add()."})
                await _until(host, made["code_review"], "done")
        finally:
            await host.stop()

    asyncio.run(main())
    return made


@pytest.fixture
def runs(settings: Any, transactional_db: Any) -> Iterator[dict[str, str]]:
    settings.JR2_SCRIPTED = True
    yield make_runs()


@pytest.fixture
def runs_with_code_review(settings: Any, transactional_db: Any) -> Iterator[dict[str, str]]:
    """`runs`, and a code_review run done."""
    settings.JR2_SCRIPTED = True
    yield make_runs(code_review=True)


def ensure_groups() -> None:
    """The Console's groups, as the data migration makes them (a transactional test's flush empties the tables)."""
    import importlib

    from django.apps import apps

    importlib.import_module("engine.migrations.0003_console_groups").create_groups(apps, None)


def user_in(username: str, *groups: str) -> User:
    ensure_groups()
    user = User.objects.create_user(username=username, password="pw-" + username)
    user.groups.add(*Group.objects.filter(name__in=groups))
    return user


def logged_in(user: User | str) -> Client:
    """A test client logged in as `user` (given by name: a new user in no group)."""
    client = Client()
    client.force_login(user_in(user) if isinstance(user, str) else user)
    return client


def post_as(user: Any, url: str, data: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    """POST a Console form as `user` with a host running in this process; the response, once no run is running (or
    after 10 s)."""

    async def post() -> Any:
        host = Host(WORKFLOWS, owner="console-tests")
        await host.start()
        try:
            client = AsyncClient()
            await client.aforce_login(user)
            response = await client.post(url, data, headers=headers)
            for _ in range(500):
                if not await host.db(lambda: Run.objects.filter(status="running").exists()):
                    break
                await asyncio.sleep(0.02)
            return response
        finally:
            await host.stop()

    return asyncio.run(post())


@pytest.fixture
def observer(transactional_db: Any) -> User:
    return user_in("olga")


@pytest.fixture
def answerer(transactional_db: Any) -> User:
    return user_in("ann", "gate-answerers")


@pytest.fixture
def operator(transactional_db: Any) -> User:
    return user_in("oscar", "operators")


@pytest.fixture
def ledger_folder(settings: Any, tmp_path: Path) -> Iterator[Path]:
    """The example workflows plus the ledger (bench/ledger.py), so the Console draws the ledger's runs as it draws
    any workflow; scripted stand-ins play the Agents."""
    folder = copy_workflows(tmp_path / "workflows", {"ledger.py": "from bench.ledger import machine  # noqa: F401\n"})
    settings.JR2_WORKFLOWS = str(folder)
    settings.JR2_SCRIPTED = True
    yield folder


class Empty(BaseModel):
    pass


def ev(name: str) -> Any:
    """An event with no input."""
    return define_event(name=name, input=Empty, description=f"The {name} event.")


def state_groups(svg: str) -> dict[str, ET.Element]:
    """The graph's state groups (`<g id="state-...">`) by state path; the SVG must be well-formed XML."""
    root = ET.fromstring(svg)
    return {g.get("id", "")[len("state-") :]: g for g in root.iter(SVG + "g") if g.get("id", "").startswith("state-")}


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real redis-server (Debian's package) on a free port, for the Redis channel layer."""
    import shutil
    import subprocess

    from tests.live_server import answered, free_port, listening

    server = shutil.which("redis-server")
    assert server, "redis-server is not installed (make test installs Debian's redis-server package)"
    port = free_port()
    process = subprocess.Popen(
        [
            server,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(tmp_path_factory.mktemp("redis")),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        answered(lambda: listening(port), process=process, timeout=10, interval=0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(params=["memory", "redis"])
def channel_layer(request: pytest.FixtureRequest, settings: Any) -> Iterator[str]:
    """The live tests run over the in-memory channel layer (the embedded default) and over Redis (the notices on
    Redis pub/sub, as a fleet has them)."""
    from channels.layers import channel_layers

    if request.param == "redis":
        url = request.getfixturevalue("redis_url")
        settings.CHANNEL_LAYERS = {  # as jr2/settings.py has them with REDIS_URL: the notices on pub/sub
            "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [url]}},
            "notices": {"BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer", "CONFIG": {"hosts": [url]}},
        }
    else:
        settings.CHANNEL_LAYERS = {"default": {"BACKEND": "engine.runtime.layers.InMemoryLayer"}}
    channel_layers.backends.clear()
    try:
        yield request.param
    finally:
        channel_layers.backends.clear()
