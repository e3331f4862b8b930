"""The ASGI handler's lean path (engine/web/middleware.py, `LeanAsgiHandler`): a bearer API call to an async
operation, in a process whose host is ready, is served without Django's thread per request, and still sends the
request signals; any other call, or a request signal with a receiver of its own, is served as Django serves it.

Threads are seen as they start (`threading.setprofile`): Django's handler starts one per request (asgiref's
ThreadSensitiveContext), the lean path none."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from django.contrib.auth.models import Permission, User
from django.core import signals

from engine.models import ApiToken
from engine.runtime.host import Host
from engine.web.middleware import LeanAsgiHandler
from tests.runtime.hosting import hosted, status, until
from workflows import notes

pytestmark = pytest.mark.django_db(transaction=True)


class Threads:
    """The threads started while watching, by name: each new thread calls the profile hook that
    `threading.setprofile` sets, first thing, and it records the thread and unhooks itself there."""

    def __init__(self) -> None:
        self.started: list[str] = []

    def __call__(self, frame: Any, event: str, arg: Any) -> None:
        sys.setprofile(None)
        self.started.append(threading.current_thread().name)

    @property
    def watching(self) -> bool:
        return threading.getprofile() is self  # type: ignore[attr-defined,comparison-overlap]

    @watching.setter
    def watching(self, on: bool) -> None:
        threading.setprofile(self if on else None)  # type: ignore[arg-type]


@pytest.fixture
def threads(settings: Any) -> Iterator[Threads]:
    settings.JR2_SCRIPTED = True
    watched = Threads()
    yield watched
    watched.watching = False


def caller() -> str:
    user = User.objects.create_user("caller")
    user.user_permissions.add(*Permission.objects.filter(codename__in=["start_run", "answer_gate"]))
    return ApiToken.issue(user)[1]


def run_through(key: str, threads: Threads, runs: int = 3) -> list[int]:
    """Start `runs` notes runs and answer their Gates through the lean handler, watching threads; the statuses."""
    codes: list[int] = []

    async def body(host: Host) -> None:
        transport = httpx.ASGITransport(app=LeanAsgiHandler())
        auth = {"Authorization": f"Bearer {key}"}
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver", headers=auth) as http:
            warm = await http.post("/api/workflows/notes/runs", json={"changes": "Warm."})  # the token's lookup
            assert warm.status_code == 201, warm.text
            threads.watching = True
            run_ids = []
            for i in range(runs):
                created = await http.post("/api/workflows/notes/runs", json={"changes": f"Fix {i}."})
                codes.append(created.status_code)
                run_ids.append(created.json()["id"])
            for run_id in run_ids:
                await until(host, status(run_id, "waiting"), what=f"run {run_id} at its Gate")
            for run_id in run_ids:
                answered = await http.post(
                    f"/api/runs/{run_id}/gates/writing.asking/events", json={"type": "reply", "text": "Admins."}
                )
                codes.append(answered.status_code)
                assert answered.json()["outcome"] == "delivered", answered.text
            threads.watching = False
            for run_id in run_ids:
                await until(host, status(run_id, "done"), what=f"run {run_id} done")

    hosted({"notes": notes.machine}, body)
    return codes


def test_bearer_starts_and_answers_start_no_thread_and_send_the_request_signals(threads: Threads) -> None:
    key = caller()
    sent: list[str] = []
    started, finished = signals.request_started.send, signals.request_finished.send

    def counted(signal: Any, name: str) -> Any:
        def send(*args: Any, **kwargs: Any) -> Any:
            sent.append(name)
            return (started if name == "started" else finished)(*args, **kwargs)

        return send

    signals.request_started.send = counted(signals.request_started, "started")  # type: ignore[method-assign]
    signals.request_finished.send = counted(signals.request_finished, "finished")  # type: ignore[method-assign]
    try:
        codes = run_through(key, threads)
    finally:
        signals.request_started.send = started  # type: ignore[method-assign]
        signals.request_finished.send = finished  # type: ignore[method-assign]
    assert codes == [201] * 3 + [200] * 3
    assert threads.started == [], threads.started
    assert sent.count("started") == sent.count("finished") == 7  # the warm-up start, 3 starts, 3 answers


def test_a_request_signal_with_a_receiver_of_its_own_is_sent_as_django_sends_it(threads: Threads) -> None:
    key = caller()
    heard: list[Any] = []

    def receiver(**kwargs: Any) -> None:
        heard.append(kwargs)

    signals.request_started.connect(receiver)
    try:
        codes = run_through(key, threads, runs=1)
    finally:
        signals.request_started.disconnect(receiver)
    assert codes == [201, 200]
    assert threads.started, "Django's handler serves each call on a thread of its own"
    assert len(heard) == 3
