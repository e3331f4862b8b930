"""A host freezes what its process holds at its first start out of the garbage collector (`JR2_GC_FREEZE`), once:
checked in a process of its own, since this one's first host froze long ago."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """
import asyncio, gc, os, sys
from pathlib import Path
from bench.runtime import setup_django
setup_django(Path(sys.argv[1]), False)
from django.core.management import call_command
call_command("migrate", verbosity=0)
from engine.runtime.host import Host
from workflows import notes

async def main():
    frozen = []
    for _ in range(2):
        host = Host({"notes": notes.machine}, owner="heap")
        await host.start()
        frozen.append(gc.get_freeze_count())
        await host.stop()
    print(*frozen)

asyncio.run(main())
"""


@pytest.mark.parametrize(("setting", "frozen"), [("1", True), ("0", False)])
def test_a_processs_first_host_freezes_the_heap_once_unless_turned_off(
    tmp_path: Path, setting: str, frozen: bool
) -> None:
    env = {**os.environ, "JR2_GC_FREEZE": setting}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "heap.sqlite3")],
        cwd=Path(__file__).resolve().parents[2],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    first, second = (int(n) for n in done.stdout.split())
    assert (first > 0) is frozen, done.stdout
    assert second == first, "the second host froze again"
