"""Runs in every status for the Console's page tests, made by a real Host on the test database, and users with the
Console's groups."""
from __future__ import annotations

import asyncio
from typing import Any, Iterator

import pytest
from django.contrib.auth.models import Group, User

from engine.models import Run
from engine.runtime.host import Host
from workflows import code_review, notes, triage

WORKFLOWS = {"notes": notes.machine, "code_review": code_review.machine, "triage": triage.machine}
NOTES_DOOR = {"changes": "Faster start-up.\nA new export button."}


async def _until(host: Host, run_id: str, *statuses: str, timeout: float = 90.0) -> None:
    """Until the run has one of `statuses`. The deadline is long: code_review starts three real Python processes
    (its checkout and two test runs), which take a while on a loaded machine."""
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        if await host.db(lambda: Run.objects.filter(id=run_id, status__in=statuses).exists()):
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"run {run_id} never reached {statuses}")


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


@pytest.fixture
def observer(transactional_db: Any) -> User:
    return user_in("olga")


@pytest.fixture
def answerer(transactional_db: Any) -> User:
    return user_in("ann", "gate-answerers")


@pytest.fixture
def operator(transactional_db: Any) -> User:
    return user_in("oscar", "operators")


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real redis-server (Debian's package) on a free port, for the Redis channel layer."""
    import shutil
    import subprocess

    from tests.live_server import answered, free_port, listening

    server = shutil.which("redis-server")
    assert server, "redis-server is not installed (make test installs Debian's redis-server package)"
    port = free_port()
    process = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                                "--dir", str(tmp_path_factory.mktemp("redis"))],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        answered(lambda: listening(port), process=process, timeout=10, interval=0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(params=["memory", "redis"])
def channel_layer(request: pytest.FixtureRequest, settings: Any) -> Iterator[str]:
    """The live tests run over the in-memory channel layer (the embedded default) and over Redis."""
    from channels.layers import channel_layers

    if request.param == "redis":
        url = request.getfixturevalue("redis_url")
        settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer",
                                               "CONFIG": {"hosts": [url]}}}
    else:
        settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    channel_layers.backends.clear()
    try:
        yield request.param
    finally:
        channel_layers.backends.clear()
