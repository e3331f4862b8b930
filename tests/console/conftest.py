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


async def _until(host: Host, run_id: str, *statuses: str) -> None:
    for _ in range(1000):
        if await host.db(lambda: Run.objects.filter(id=run_id, status__in=statuses).exists()):
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"run {run_id} never reached {statuses}")


def make_runs() -> dict[str, str]:
    """One run per status the pages show: waiting (notes at its Gate), done, cancelled, failed (a fault), triage
    waiting at its desk, and code_review done (with Effects)."""
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
