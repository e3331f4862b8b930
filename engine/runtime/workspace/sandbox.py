"""An Agent's workspace: a folder on disk, and the sandbox that keeps every read and write inside it.

`agent(..., workspace="run")` gives the Agent a folder of its own per run; `workspace="shared"` one folder per run
that every Agent of the run asking for it shares. Both live under `JR2_WORKSPACE_ROOT`:

    <root>/<run id>/agent-<agent>/     workspace="run"   (the Agent's name escaped: "/" of a child Machine, dots...)
    <root>/<run id>/shared/            workspace="shared"

A folder outlives its run (a person may want to read what the Agents left) until the run is deleted.

Every path an Agent gives is relative to the top of its folder, and the sandbox (engine/runtime/workspace/
confined.py) refuses, with the reason, anything that would leave the folder. Sizes are capped: per file written or
read, for the whole folder, and the number of files (`Limits`).

Writes are atomic (a temporary file renamed over the old one) and idempotent by content: writing what a file
already holds changes nothing, so a Turn taken up after a crash may safely repeat its last write.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import stat
from pathlib import Path

from engine.core.workspace import TOOL_NAMES
from engine.runtime.workspace.confined import ConfinedFolder, Limits, WorkspaceError

__all__ = [
    "TOOL_NAMES",
    "Limits",
    "Workspace",
    "WorkspaceError",
    "folder_for",
    "run_folder",
    "remove_run_folder",
    "configured_root",
    "configured_limits",
    "escape_name",
]


#: Runs are named by `engine.models.new_run_id`; anything else is never turned into a folder.
_RUN_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_LIST_SHOWN = 500
_MATCHES_SHOWN = 100
_MATCH_LINE = 200


def configured_root() -> Path:
    """`settings.JR2_WORKSPACE_ROOT`, read when asked (importing this module reads no settings)."""
    from django.conf import settings

    root = getattr(settings, "JR2_WORKSPACE_ROOT", None)
    if not root:
        raise WorkspaceError("JR2_WORKSPACE_ROOT is not set: name the folder that holds the runs' workspaces")
    return Path(os.path.abspath(os.fspath(root)))


def configured_limits() -> Limits:
    """`settings.JR2_WORKSPACE_LIMITS` as Limits; a bad value is refused with what is wrong (system check
    engine.E001 says so at start-up too)."""
    from django.conf import settings

    try:
        return Limits.from_mapping(getattr(settings, "JR2_WORKSPACE_LIMITS", None) or {})
    except (TypeError, ValueError) as err:
        raise WorkspaceError(str(err)) from None


def escape_name(name: str) -> str:
    """An Agent's name as one folder name: letters, digits, `-` and `_` kept, everything else `%XX` (so `.`, `..`
    and `/` can never reach the path, and two names never share a folder)."""
    return "".join(
        c if (c.isalnum() and c.isascii()) or c in "-_" else "".join(f"%{b:02X}" for b in c.encode()) for c in name
    )


def run_folder(run_id: str, root: Path | None = None) -> Path:
    """The folder holding every workspace of a run."""
    if not isinstance(run_id, str) or not _RUN_ID.match(run_id):
        raise WorkspaceError(f"not a run id: {run_id!r}")
    return (root or configured_root()) / run_id


def folder_for(run_id: str, agent: str, mode: str, root: Path | None = None) -> Path:
    """The workspace folder of `agent` in a run, for its mode ("run" or "shared")."""
    if mode == "shared":
        return run_folder(run_id, root) / "shared"
    if mode == "run":
        return run_folder(run_id, root) / f"agent-{escape_name(agent)}"
    raise WorkspaceError(f'the Agent "{agent}" has no workspace (workspace={mode!r})')


def remove_run_folder(run_id: str, root: Path | None = None) -> bool:
    """Delete every workspace of a run (its run was deleted). True when there was something to delete. A symlink
    in the run's place is unlinked, never followed; `rmtree` does not follow the symlinks inside either."""
    path = run_folder(run_id, root)
    if path.is_symlink():
        path.unlink()
        return True
    if not path.exists():
        return False
    shutil.rmtree(path)
    return True


class Workspace(ConfinedFolder):
    """One workspace folder and its sandbox (engine/runtime/workspace/confined.py), with the Agent's tools on it.
    Each method answers in text for the model, or raises WorkspaceError with the reason; none follows a way out of
    the folder."""

    # -- the tools ---------------------------------------------------------------------------------------------

    def list_files(self, path: str = ".") -> str:
        """The regular files under `path` (a folder), with their sizes, sorted; then the folder's use of its caps."""
        self.ensure()
        parts = self.resolve(path)
        found = list(self._walk(parts))
        files = [(rel, size) for rel, size, kind in found if kind == "file"]
        other = sum(1 for _, _, kind in found if kind != "file")
        files_total, bytes_total = self.usage()
        lines = [f"{rel} ({size} bytes)" for rel, size in files[:_LIST_SHOWN]]
        if len(files) > _LIST_SHOWN:
            lines.append(f"... and {len(files) - _LIST_SHOWN} more files: list a folder inside to see them")
        if other:
            lines.append(
                f"({other} entries that are not regular files or folders are not shown: symlinks, "
                "devices, FIFOs or sockets)"
            )
        where = "the workspace" if not parts else f'"{"/".join(parts)}"'
        head = f"{_count(len(files), 'file')} in {where}:" if files else f"No files in {where}."
        caps = (
            f"The workspace holds {files_total} of at most {self.limits.files} files and {bytes_total} of at "
            f"most {self.limits.total_bytes} bytes."
        )
        return "\n".join([head, *lines, caps])

    def read(self, path: str, start_line: int = 1, end_line: int = 0) -> str:
        """Lines `start_line`..`end_line` (1-based, inclusive; 0: to the end) of a text file, under a header that
        says which; cut at `read_bytes`, with the line to read on from."""
        if isinstance(start_line, bool) or not isinstance(start_line, int) or start_line < 1:
            raise WorkspaceError(f"start_line must be a whole number from 1; got {start_line!r}")
        if isinstance(end_line, bool) or not isinstance(end_line, int) or end_line < 0:
            raise WorkspaceError(f"end_line must be a whole number, 0 for the end of the file; got {end_line!r}")
        if end_line and end_line < start_line:
            raise WorkspaceError(f"end_line {end_line} is before start_line {start_line}")
        parts = self._file_parts(path)
        data = self._read_bytes(parts, path)
        name = "/".join(parts)
        if not data:
            return f"{name} is empty (0 bytes)."
        lines = data.decode("utf-8", errors="replace").splitlines(keepends=True)
        if start_line > len(lines):
            raise WorkspaceError(f"{name} has {len(lines)} lines; there is no line {start_line}")
        last = min(end_line or len(lines), len(lines))
        cap = self.limits.read_bytes
        shown: list[str] = []
        size = 0
        for number in range(start_line, last + 1):
            line = lines[number - 1]
            size += len(line.encode())
            if size > cap:
                if not shown:
                    start = line.encode()[:cap].decode("utf-8", errors="ignore")
                    return (
                        f"{name}, line {number} of {len(lines)}, its first {cap} bytes (the cap of one read; the "
                        f"line is longer):\n{start}"
                    )
                return (
                    f"{name}, lines {start_line}-{number - 1} of {len(lines)} (cut at {cap} bytes, the cap of "
                    f"one read: read on from line {number}):\n{''.join(shown)}"
                )
            shown.append(line)
        return f"{name}, lines {start_line}-{last} of {len(lines)}:\n{''.join(shown)}"

    def write(self, path: str, content: str) -> str:
        """Create or replace a file with `content` (text, UTF-8), making its folders; idempotent by content."""
        if not isinstance(content, str):
            raise WorkspaceError(f"content must be text; got {type(content).__name__}")
        data = content.encode("utf-8")
        parts = self._file_parts(path)
        name = "/".join(parts)
        if len(data) > self.limits.file_bytes:
            raise WorkspaceError(
                f"{name}: {len(data)} bytes is over the cap of {self.limits.file_bytes} bytes per "
                "file; nothing was written"
            )
        self.ensure()
        with self._directory(parts[:-1], create=True, path=path) as fd:
            old = self._existing(fd, parts[-1], name, data)
            if old is not None and old[1]:
                return f"{name} already holds exactly this ({_count(len(data), 'byte')}); nothing changed."
            files, total = self.usage()
            after_files = files + (0 if old is not None else 1)
            after_total = total - (old[0] if old is not None else 0) + len(data)
            if after_files > self.limits.files:
                raise WorkspaceError(f"{name}: the workspace already holds {files} files, its cap; nothing was written")
            if after_total > self.limits.total_bytes:
                raise WorkspaceError(
                    f"{name}: the workspace would hold {after_total} bytes, over its cap of "
                    f"{self.limits.total_bytes}; nothing was written"
                )
            self._replace(fd, parts[-1], data, name)
        verb = "replaced" if old is not None else "created"
        return f"{name} {verb} ({_count(len(data), 'byte')})."

    def search(self, text: str, path: str = ".", ignore_case: bool = False) -> str:
        """The lines holding `text` (plain text, not a pattern) in the text files under `path`: `file:line: text`."""
        if not isinstance(text, str) or not text or "\n" in text:
            raise WorkspaceError("text must be a non-empty string on one line")
        if len(text) > _MATCH_LINE:
            raise WorkspaceError(f"text is {len(text)} characters; search for at most {_MATCH_LINE}")
        parts = self.resolve(path)
        needle = text.lower() if ignore_case else text
        self.ensure()
        try:
            info = os.lstat(self.folder.joinpath(*parts))
        except FileNotFoundError:
            raise WorkspaceError(f'"{path}" does not exist') from None
        candidates = (
            [("/".join(parts), info.st_size)]
            if parts and stat.S_ISREG(info.st_mode)
            else [(rel, size) for rel, size, kind in self._walk(parts) if kind == "file"]
        )
        matches: list[str] = []
        skipped = 0
        more = False
        for rel, size in candidates:
            if size > self.limits.file_bytes:
                skipped += 1
                continue
            try:
                data = self._read_bytes(rel.split("/"), rel)
            except WorkspaceError:
                skipped += 1
                continue
            for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
                if needle in (line.lower() if ignore_case else line):
                    if len(matches) == _MATCHES_SHOWN:
                        more = True
                        break
                    matches.append(f"{rel}:{number}: {line[:_MATCH_LINE]}")
            if more:
                break
        out = matches or [f'No line holds "{text}".']
        if more:
            out.append(f"(more than {_MATCHES_SHOWN} matches: search a narrower path or text)")
        if skipped:
            out.append(
                f"({skipped} files were not searched: binary, hard-linked, or over {self.limits.file_bytes} bytes)"
            )
        return "\n".join(out)

    # -- for the Console and Effects ---------------------------------------------------------------------------

    def matching(self, patterns: tuple[str, ...] | list[str], most: int = 20) -> list[tuple[str, str]]:
        """(path, text) of the first `most` regular files, by path, whose path from the top matches one of the
        shell-style `patterns` (`*` crosses `/` too): the text cut at `read_bytes`, or why it cannot be shown."""
        out: list[tuple[str, str]] = []
        for rel, _, kind in self._walk([]):
            if kind != "file" or not any(fnmatch.fnmatchcase(rel, p) for p in patterns):
                continue
            if len(out) == most:
                out.append(("...", f"more files match; only the first {most} are shown"))
                break
            try:
                data = self._read_bytes(rel.split("/"), rel)
            except WorkspaceError as err:
                out.append((rel, f"(not shown: {err})"))
                continue
            text = data[: self.limits.read_bytes].decode("utf-8", errors="replace")
            if len(data) > self.limits.read_bytes:
                text += f"\n[cut at {self.limits.read_bytes} of {len(data)} bytes]"
            out.append((rel, text))
        return out

    def directory(self, path: str = ".") -> str:
        """The real path of a folder inside the workspace (an Effect's working directory)."""
        self.ensure()
        parts = self.resolve(path)
        with self._directory(parts, create=False, path=path):
            pass
        return str(self.folder.joinpath(*parts))

    def usage(self) -> tuple[int, int]:
        """(regular files, their bytes) in the whole folder."""
        files = total = 0
        for _, size, kind in self._walk([]):
            if kind == "file":
                files += 1
                total += size
        return files, total


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
