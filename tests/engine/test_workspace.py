"""The workspace sandbox (engine/runtime/workspace/confined.py) on a real folder: each way out is refused with its
reason, the caps hold, writes are atomic and idempotent by content; and the authoring options that name a workspace
are checked when the Machine is built."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest
from pydantic import BaseModel

from engine import agent, define_event, effect, gate, jr2_setup
from engine.core.errors import MachineError
from engine.core.statechart.errors import ConfigError
from engine.runtime.workspace.sandbox import (
    Limits,
    Workspace,
    WorkspaceError,
    escape_name,
    folder_for,
    remove_run_folder,
    run_folder,
)


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path / "ws")
    workspace.ensure()
    return workspace


def refused(call: object, *args: object) -> str:
    with pytest.raises(WorkspaceError) as caught:
        call(*args)  # type: ignore[operator]
    return str(caught.value)


# -- the ways out -----------------------------------------------------------------------------------------------


def test_an_absolute_path_is_refused_with_the_reason(ws: Workspace) -> None:
    for call in (ws.read, ws.list_files):
        assert refused(call, "/etc/passwd").startswith('"/etc/passwd" is an absolute path, which leaves the workspace')
    assert "absolute path" in refused(ws.write, "/tmp/x", "data")


@pytest.mark.parametrize("path", ["../x", "a/../../x", "a/..", ".."])
def test_dot_dot_is_refused_wherever_it_stands(ws: Workspace, path: str) -> None:
    assert "which leaves the workspace" in refused(ws.read, path) and '".."' in refused(ws.read, path)
    assert '".."' in refused(ws.write, path, "data")
    assert not (ws.folder.parent / "x").exists()


def test_a_symlink_pointing_out_is_refused_absolute_or_relative(ws: Workspace, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("outside")
    (ws.folder / "abs").symlink_to(secret)
    (ws.folder / "sub").mkdir()
    (ws.folder / "sub" / "up").symlink_to("../..")
    (ws.folder / "dir_out").symlink_to(tmp_path)
    why = "goes through a symlink that points outside the workspace"
    assert why in refused(ws.read, "abs")
    assert why in refused(ws.read, "sub/up/secret.txt")
    assert why in refused(ws.read, "dir_out/secret.txt")
    assert why in refused(ws.write, "abs", "overwritten")
    assert why in refused(ws.write, "dir_out/new.txt", "x")
    assert why in refused(ws.list_files, "dir_out")
    assert why in refused(ws.search, "outside", "dir_out")
    assert secret.read_text() == "outside" and not (tmp_path / "new.txt").exists()


def test_a_symlink_that_stays_inside_is_followed(ws: Workspace) -> None:
    ws.write("src/app.py", "print('hi')\n")
    (ws.folder / "app").symlink_to("src/app.py")
    (ws.folder / "code").symlink_to(ws.folder / "src")  # absolute, but inside
    assert ws.read("app") == "src/app.py, lines 1-1 of 1:\nprint('hi')\n"
    assert ws.read("code/app.py").startswith("src/app.py, lines 1-1")
    assert ws.write("code/new.py", "x = 1\n") == "src/new.py created (6 bytes)."


def test_a_symlink_loop_is_refused(ws: Workspace) -> None:
    (ws.folder / "a").symlink_to("b")
    (ws.folder / "b").symlink_to("a")
    assert "too many symlinks" in refused(ws.read, "a")


def test_a_symlink_swapped_in_after_the_check_is_not_followed(ws: Workspace, tmp_path: Path) -> None:
    """The resolved path is opened one part at a time with O_NOFOLLOW: a folder replaced by a symlink between the
    check and the open (an Effect running in the folder could do it) is refused, not followed."""
    ws.write("src/a.txt", "inside")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "a.txt").write_text("outside")
    parts = ws.resolve("src/a.txt")
    (ws.folder / "src" / "a.txt").unlink()
    (ws.folder / "src").rmdir()
    (ws.folder / "src").symlink_to(tmp_path / "elsewhere")
    assert "became a symlink while it was used" in refused(ws._read_bytes, parts, "src/a.txt")


def test_fifos_sockets_and_device_files_are_refused_never_opened(ws: Workspace) -> None:
    os.mkfifo(ws.folder / "pipe")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(ws.folder / "sock"))
        assert refused(ws.read, "pipe") == '"pipe" is a FIFO, not a regular file; only regular files can be read'
        assert refused(ws.read, "sock").startswith('"sock" is a socket, not a regular file')
        assert refused(ws.write, "pipe", "x").startswith('"pipe" is a FIFO')
    if os.geteuid() == 0:
        os.mknod(ws.folder / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
        assert refused(ws.read, "null").startswith('"null" is a device file, not a regular file')
    assert "not shown" in ws.list_files()


def test_a_hard_link_is_not_read(ws: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    os.link(outside, ws.folder / "linked.txt")
    assert "is a hard link" in refused(ws.read, "linked.txt")
    assert ws.write("linked.txt", "mine") == "linked.txt replaced (4 bytes)."
    assert outside.read_text() == "secret", "a write replaces the name, never the linked file"


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("a\x00b", "NUL"),
        ("x" * 201, "at most 200 characters"),
        ("a/" * 600, "at most 1024 characters"),
    ],
)
def test_odd_paths_are_refused(ws: Workspace, path: str, why: str) -> None:
    assert why in refused(ws.read, path)


def test_folders_and_missing_files_are_named(ws: Workspace) -> None:
    ws.write("src/a.py", "")
    assert refused(ws.read, "src") == '"src" is a folder: list it with workspace_list'
    assert refused(ws.read, ".") == '"." is the top of the workspace, not a file'
    assert refused(ws.read, "nope.py").startswith('"nope.py" does not exist')
    assert refused(ws.read, "src/a.py/x").startswith('"src/a.py" is a regular file, not a folder')


# -- reading, writing, listing, searching -----------------------------------------------------------------------


def test_write_creates_folders_and_is_idempotent_by_content(ws: Workspace) -> None:
    assert ws.write("pkg/mod/a.py", "x = 1\n") == "pkg/mod/a.py created (6 bytes)."
    before = os.stat(ws.folder / "pkg/mod/a.py").st_mtime_ns
    assert ws.write("pkg/mod/a.py", "x = 1\n") == "pkg/mod/a.py already holds exactly this (6 bytes); nothing changed."
    assert os.stat(ws.folder / "pkg/mod/a.py").st_mtime_ns == before
    assert ws.write("./pkg//mod/a.py", "x = 2\n") == "pkg/mod/a.py replaced (6 bytes)."
    assert (ws.folder / "pkg/mod/a.py").read_text() == "x = 2\n"
    assert sorted(os.listdir(ws.folder / "pkg/mod")) == ["a.py"], "no temporary file is left"


def test_read_by_line_ranges(ws: Workspace) -> None:
    ws.write("f.txt", "".join(f"line {n}\n" for n in range(1, 11)))
    assert ws.read("f.txt", 3, 4) == "f.txt, lines 3-4 of 10:\nline 3\nline 4\n"
    assert ws.read("f.txt", 9) == "f.txt, lines 9-10 of 10:\nline 9\nline 10\n"
    assert ws.read("f.txt", 10, 99).endswith("line 10\n")
    assert refused(ws.read, "f.txt", 11) == "f.txt has 10 lines; there is no line 11"
    assert refused(ws.read, "f.txt", 5, 4) == "end_line 4 is before start_line 5"
    assert refused(ws.read, "f.txt", 0) == "start_line must be a whole number from 1; got 0"
    ws.write("empty.txt", "")
    assert ws.read("empty.txt") == "empty.txt is empty (0 bytes)."


def test_a_binary_file_is_not_read(ws: Workspace) -> None:
    (ws.folder / "b.bin").write_bytes(b"\x7fELF\x00\x00")
    assert refused(ws.read, "b.bin") == "b.bin looks binary (it holds NUL bytes); only text files can be read"


def test_list_and_search(ws: Workspace) -> None:
    ws.write("b.py", "def add(a, b):\n    return a + b\n")
    ws.write("src/a.py", "ADD = 'add'\n")
    assert ws.list_files() == (
        "2 files in the workspace:\nb.py (32 bytes)\nsrc/a.py (12 bytes)\n"
        "The workspace holds 2 of at most 2000 files and 44 of at most 67108864 bytes."
    )
    assert ws.list_files("src").startswith('1 file in "src":\nsrc/a.py (12 bytes)')
    assert ws.search("add") == "b.py:1: def add(a, b):\nsrc/a.py:1: ADD = 'add'"
    assert ws.search("ADD", "src") == "src/a.py:1: ADD = 'add'"
    assert ws.search("add", "b.py", ignore_case=True) == "b.py:1: def add(a, b):"
    assert ws.search("nothing like this") == 'No line holds "nothing like this".'
    assert refused(ws.search, "") == "text must be a non-empty string on one line"


def test_an_empty_workspace_lists_and_searches_to_nothing(tmp_path: Path) -> None:
    fresh = Workspace(tmp_path / "never-made")
    assert fresh.list_files().startswith("No files in the workspace.")
    assert fresh.search("x") == 'No line holds "x".'


# -- caps -------------------------------------------------------------------------------------------------------


def test_the_caps_hold_and_a_refused_write_changes_nothing(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws", Limits(file_bytes=10, read_bytes=8, total_bytes=25, files=3))
    assert "11 bytes is over the cap of 10 bytes per file" in refused(ws.write, "big.txt", "x" * 11)
    assert not (ws.folder / "big.txt").exists()
    ws.write("a.txt", "1234567890")
    ws.write("b.txt", "1234567890")
    assert "would hold 30 bytes, over its cap of 25" in refused(ws.write, "c.txt", "1234567890")
    assert ws.write("a.txt", "12345") == "a.txt replaced (5 bytes)."
    ws.write("c.txt", "1")
    assert "already holds 3 files, its cap" in refused(ws.write, "d.txt", "1")
    assert sorted(os.listdir(ws.folder)) == ["a.txt", "b.txt", "c.txt"]
    (ws.folder / "huge.txt").write_text("y" * 50)
    assert "huge.txt is 50 bytes, over the cap of 10 bytes per file" in refused(ws.read, "huge.txt")


def test_a_read_is_cut_at_its_cap_and_says_where_to_read_on(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws", Limits(read_bytes=10))
    ws.write("f.txt", "abcd\nefgh\nijkl\n")
    assert ws.read("f.txt") == (
        "f.txt, lines 1-2 of 3 (cut at 10 bytes, the cap of one read: read on from line 3):\nabcd\nefgh\n"
    )
    assert ws.read("f.txt", 3) == "f.txt, lines 3-3 of 3:\nijkl\n"
    ws.write("long.txt", "0123456789abcdef\n")
    assert ws.read("long.txt") == (
        "long.txt, line 1 of 1, its first 10 bytes (the cap of one read; the line is longer):\n0123456789"
    )


def test_limits_from_settings_are_checked() -> None:
    assert Limits.from_mapping({"files": 5}) == Limits(files=5)
    with pytest.raises(ValueError, match=r"unknown keys \['file'\]"):
        Limits.from_mapping({"file": 5})
    with pytest.raises(ValueError, match="must be a positive integer; got -1"):
        Limits.from_mapping({"files": -1})


# -- folders of runs --------------------------------------------------------------------------------------------


def test_each_agent_gets_its_own_folder_and_shared_agents_one(tmp_path: Path) -> None:
    assert folder_for("run1", "coder", "run", tmp_path) == tmp_path / "run1" / "agent-coder"
    assert folder_for("run1", "sub/coder", "run", tmp_path) == tmp_path / "run1" / "agent-sub%2Fcoder"
    assert folder_for("run1", "coder", "shared", tmp_path) == folder_for("run1", "tester", "shared", tmp_path)
    assert escape_name("..") == "%2E%2E" and escape_name("a.b") != escape_name("a%2Eb")
    assert "has no workspace" in refused(folder_for, "run1", "coder", "none", tmp_path)
    assert refused(run_folder, "../etc", tmp_path) == "not a run id: '../etc'"


def test_removing_a_runs_folder_removes_every_workspace_but_follows_no_symlink(tmp_path: Path) -> None:
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "precious.txt").write_text("keep me")
    Workspace(folder_for("run1", "coder", "run", tmp_path)).write("a.py", "x")
    (folder_for("run1", "coder", "run", tmp_path) / "link").symlink_to(keep)
    Workspace(folder_for("run1", "x", "shared", tmp_path)).write("b.py", "y")
    assert remove_run_folder("run1", tmp_path) is True
    assert not (tmp_path / "run1").exists() and (keep / "precious.txt").read_text() == "keep me"
    assert remove_run_folder("run1", tmp_path) is False


def test_the_console_reads_matching_files(ws: Workspace) -> None:
    ws.write("src/app.py", "<b>app</b>\n")
    ws.write("README.md", "read me\n")
    ws.write("data.bin", "\x00")
    assert ws.matching(["*.py", "README.md", "*.bin"]) == [
        ("README.md", "read me\n"),
        ("data.bin", "(not shown: data.bin looks binary (it holds NUL bytes); only text files can be read)"),
        ("src/app.py", "<b>app</b>\n"),
    ]
    assert ws.matching(["*.txt"]) == []


def test_an_effects_working_directory_stays_inside(ws: Workspace, tmp_path: Path) -> None:
    ws.write("sub/a.txt", "x")
    (ws.folder / "out").symlink_to(tmp_path)
    assert ws.directory() == str(ws.folder)
    assert ws.directory("sub") == str(ws.folder / "sub")
    assert "points outside" in refused(ws.directory, "out")
    assert refused(ws.directory, "nope") == '"nope" does not exist'
    assert "is a regular file, not a folder" in refused(ws.directory, "sub/a.txt")


# -- authoring --------------------------------------------------------------------------------------------------


class Empty(BaseModel):
    pass


finish = define_event(name="finish", input=Empty)


def machine(actors: dict[str, object], events: list[object] | None = None) -> object:
    return jr2_setup(events=events or [finish], actors=actors).create_machine(
        {
            "id": "m",
            "initial": "work",
            "states": {
                "work": {"invoke": {"src": "worker", "input": {"prompt": "Work."}}, "on": {"finish": "done"}},
                "done": {"type": "final"},
            },
        }
    )


def test_agent_workspace_takes_only_its_three_values() -> None:
    for mode in ("none", "run", "shared"):
        assert agent("script/x", "Work.", workspace=mode).workspace == mode
    with pytest.raises(ConfigError) as caught:
        agent("script/x", "Work.", workspace="repo")
    assert str(caught.value).startswith("agent workspace 'repo' must be one of 'none', 'run', 'shared'")


def test_effect_and_gate_options_are_checked_when_written() -> None:
    assert effect.command(["pytest"], workspace="coder").spec["workspace"] == "coder"
    assert "workspace" not in effect.command(["pytest"]).spec
    with pytest.raises(ConfigError, match="leaves the workspace"):
        effect.command(["pytest"], workspace="coder", cwd="../up")
    with pytest.raises(ConfigError, match="names an Agent with a workspace"):
        effect.command(["pytest"], workspace="")
    assert gate(workspace="coder", files="*.py").files == ("*.py",)
    with pytest.raises(ConfigError, match="leaves the workspace"):
        gate(workspace="coder", files=["/etc/*"])
    with pytest.raises(ConfigError, match="at least one"):
        gate(workspace="coder", files=[])


def test_the_machine_refuses_workspace_names_that_do_not_fit() -> None:
    worker = agent("script/x", "Work.", workspace="run")
    clash = define_event(name="workspace_read", input=Empty)
    with pytest.raises(
        MachineError,
        match=r'the Agent "worker" has a workspace.*rename its event\(s\) '
        r"workspace_read",
    ):
        jr2_setup(events=[clash], actors={"worker": worker}).create_machine(
            {
                "id": "m",
                "initial": "work",
                "states": {
                    "work": {
                        "invoke": {"src": "worker", "input": {"prompt": "Work."}},
                        "on": {"workspace_read": "done"},
                    },
                    "done": {"type": "final"},
                },
            }
        )
    with pytest.raises(MachineError, match='the Effect "tests" uses the workspace of "coder", which is not an Agent'):
        machine({"worker": worker, "tests": effect.command(["pytest"], workspace="coder")})
    with pytest.raises(MachineError, match='uses the workspace of the Agent "worker", which has none'):
        machine({"worker": agent("script/x", "Work."), "tests": effect.command(["pytest"], workspace="worker")})
    with pytest.raises(MachineError, match='the Gate slot "desk" uses the workspace of "nobody"'):
        machine({"worker": worker, "desk": gate(workspace="nobody", files="*")})
    built = machine(
        {
            "worker": worker,
            "tests": effect.command(["pytest"], workspace="worker"),
            "desk": gate(workspace="worker", files="*"),
        }
    )
    assert built.agent_slot("worker") is worker
