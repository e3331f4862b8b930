"""An Agent's workspace: a folder on disk, and the sandbox that keeps every read and write inside it.

`agent(..., workspace="run")` gives the Agent a folder of its own per run; `workspace="shared"` one folder per run
that every Agent of the run asking for it shares. Both live under `JR2_WORKSPACE_ROOT`:

    <root>/<run id>/agent-<agent>/     workspace="run"   (the Agent's name escaped: "/" of a child Machine, dots...)
    <root>/<run id>/shared/            workspace="shared"

A folder outlives its run (a person may want to read what the Agents left) until the run is deleted.

Every path an Agent gives is relative to the top of its folder. The sandbox refuses, with the reason, anything that
would leave the folder: an absolute path, a `..` part, a symlink whose target is outside (symlinks that stay inside
are followed), a hard-linked file (it may be a file outside), and anything that is not a regular file or folder
(device files, FIFOs, sockets). The resolved path is then opened one part at a time with `O_NOFOLLOW`, so a symlink
put in its way after the check is refused too. Sizes are capped: per file written or read, for the whole folder,
and the number of files (`Limits`).

Writes are atomic (a temporary file renamed over the old one) and idempotent by content: writing what a file
already holds changes nothing, so a Turn taken up after a crash may safely repeat its last write.
"""
from __future__ import annotations

import contextlib
import errno
import fnmatch
import os
import re
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

from engine.core.workspace import TOOL_NAMES

__all__ = ["TOOL_NAMES", "Limits", "Workspace", "WorkspaceError", "folder_for", "run_folder",
           "remove_run_folder", "configured_root", "configured_limits", "escape_name"]


#: Runs are named by `engine.models.new_run_id`; anything else is never turned into a folder.
_RUN_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_MAX_PART = 200
_MAX_PATH = 1024
_MAX_HOPS = 40
_LIST_SHOWN = 500
_MATCHES_SHOWN = 100
_MATCH_LINE = 200
_BINARY_PROBE = 8192


class WorkspaceError(Exception):
    """A workspace request refused, with the reason in words the Agent (or a person) can act on."""


@dataclass(frozen=True)
class Limits:
    """The caps of one workspace (setting `JR2_WORKSPACE_LIMITS`, a dict with any of these keys)."""

    #: The largest file a write may leave, and the largest file a read or a search opens.
    file_bytes: int = 1024 * 1024
    #: The most text one read returns; a longer file is read by line ranges.
    read_bytes: int = 64 * 1024
    #: Every regular file of the folder together.
    total_bytes: int = 64 * 1024 * 1024
    #: How many regular files the folder may hold.
    files: int = 2000

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> Limits:
        """Limits from a settings dict; an unknown key or a value that is not a positive integer is refused."""
        known = {"file_bytes", "read_bytes", "total_bytes", "files"}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"JR2_WORKSPACE_LIMITS has unknown keys {unknown}; known: {sorted(known)}")
        for key, value in values.items():
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"JR2_WORKSPACE_LIMITS[{key!r}] must be a positive integer; got {value!r}")
        return cls(**dict(values))


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
    return "".join(c if (c.isalnum() and c.isascii()) or c in "-_" else "".join(f"%{b:02X}" for b in c.encode())
                   for c in name)


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


class Workspace:
    """One workspace folder and its sandbox. Each method answers in text for the model, or raises WorkspaceError
    with the reason; none follows a way out of the folder."""

    def __init__(self, folder: Path | str, limits: Limits | None = None) -> None:
        self.folder = Path(os.path.abspath(os.fspath(folder)))
        self.limits = limits or Limits()

    def __repr__(self) -> str:
        return f"Workspace({str(self.folder)!r})"

    def ensure(self) -> None:
        """Create the folder (and its parents) if it is not there yet."""
        self.folder.mkdir(parents=True, exist_ok=True)

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
            lines.append(f"({other} entries that are not regular files or folders are not shown: symlinks, "
                         "devices, FIFOs or sockets)")
        where = "the workspace" if not parts else f'"{"/".join(parts)}"'
        head = f"{_count(len(files), 'file')} in {where}:" if files else f"No files in {where}."
        caps = (f"The workspace holds {files_total} of at most {self.limits.files} files and {bytes_total} of at "
                f"most {self.limits.total_bytes} bytes.")
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
                    return (f"{name}, line {number} of {len(lines)}, its first {cap} bytes (the cap of one read; the "
                            f"line is longer):\n{start}")
                return (f"{name}, lines {start_line}-{number - 1} of {len(lines)} (cut at {cap} bytes, the cap of "
                        f"one read: read on from line {number}):\n{''.join(shown)}")
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
            raise WorkspaceError(f"{name}: {len(data)} bytes is over the cap of {self.limits.file_bytes} bytes per "
                                 "file; nothing was written")
        self.ensure()
        with self._directory(parts[:-1], create=True, path=path) as fd:
            old = self._existing(fd, parts[-1], name, data)
            if old is not None and old[1]:
                return f"{name} already holds exactly this ({_count(len(data), 'byte')}); nothing changed."
            files, total = self.usage()
            after_files = files + (0 if old is not None else 1)
            after_total = total - (old[0] if old is not None else 0) + len(data)
            if after_files > self.limits.files:
                raise WorkspaceError(f"{name}: the workspace already holds {files} files, its cap; nothing was "
                                     "written")
            if after_total > self.limits.total_bytes:
                raise WorkspaceError(f"{name}: the workspace would hold {after_total} bytes, over its cap of "
                                     f"{self.limits.total_bytes}; nothing was written")
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
        candidates = [("/".join(parts), info.st_size)] if parts and stat.S_ISREG(info.st_mode) else \
            [(rel, size) for rel, size, kind in self._walk(parts) if kind == "file"]
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
            out.append(f"({skipped} files were not searched: binary, hard-linked, or over "
                       f"{self.limits.file_bytes} bytes)")
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
            text = data[:self.limits.read_bytes].decode("utf-8", errors="replace")
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

    # -- the sandbox ---------------------------------------------------------------------------------------------

    def resolve(self, path: str) -> list[str]:
        """The parts of `path` below the folder, symlinks inside it followed; WorkspaceError for any way out."""
        todo = self._parts(path)
        done: list[str] = []
        hops = 0
        missing = False
        while todo:
            part = todo.pop(0)
            if part == "..":  # only a symlink's target brings these
                if not done:
                    raise WorkspaceError(f'"{path}" goes through a symlink that points outside the workspace')
                done.pop()
                continue
            here = self.folder.joinpath(*done, part)
            if not missing:
                try:
                    info = os.lstat(here)
                except FileNotFoundError:
                    missing = True
                except OSError as err:
                    raise WorkspaceError(f'"{path}": {err.strerror}') from None
                else:
                    if stat.S_ISLNK(info.st_mode):
                        hops += 1
                        if hops > _MAX_HOPS:
                            raise WorkspaceError(f'"{path}" goes through too many symlinks')
                        target, from_top = self._link_target(here, done, path)
                        todo = target + todo
                        if from_top:
                            done = []
                        continue
                    if todo and not stat.S_ISDIR(info.st_mode):
                        raise WorkspaceError(f'"{"/".join([*done, part])}" is {_kind(info.st_mode)}, not a folder')
            done.append(part)
        return done

    def _parts(self, path: str) -> list[str]:
        if not isinstance(path, str):
            raise WorkspaceError(f"a path must be text; got {type(path).__name__}")
        if "\x00" in path:
            raise WorkspaceError("a path cannot hold a NUL character")
        if path.startswith("/"):
            raise WorkspaceError(f'"{path}" is an absolute path, which leaves the workspace: give the path from '
                                 'the top of the workspace, such as "src/app.py"')
        if len(path) > _MAX_PATH:
            raise WorkspaceError(f"a path may be at most {_MAX_PATH} characters; this one has {len(path)}")
        parts = [p for p in path.split("/") if p not in ("", ".")]
        if ".." in parts:
            raise WorkspaceError(f'"{path}" holds "..", which leaves the workspace: give the path from the top of '
                                 "the workspace")
        long = next((p for p in parts if len(p) > _MAX_PART), None)
        if long is not None:
            raise WorkspaceError(f"a file or folder name may be at most {_MAX_PART} characters; "
                                 f'"{long[:40]}..." has {len(long)}')
        return parts

    def _link_target(self, link: Path, done: list[str], path: str) -> tuple[list[str], bool]:
        """A symlink's target as parts to walk on from: relative to the link's folder, or, when absolute, from the
        top of the workspace if it lies inside it. A target outside is refused."""
        target = os.readlink(link)
        if os.path.isabs(target):
            real_top = os.path.realpath(self.folder)
            normal = os.path.normpath(target)
            for top in {str(self.folder), real_top}:
                if normal == top or normal.startswith(top + os.sep):
                    return [p for p in normal[len(top):].split(os.sep) if p not in ("", ".")], True
            raise WorkspaceError(f'"{path}" goes through a symlink that points outside the workspace')
        parts = [p for p in target.split("/") if p not in ("", ".")]
        depth = len(done)
        for part in parts:
            depth += -1 if part == ".." else 1
            if depth < 0:
                raise WorkspaceError(f'"{path}" goes through a symlink that points outside the workspace')
        return parts, False

    def _file_parts(self, path: str) -> list[str]:
        parts = self.resolve(path)
        if not parts:
            raise WorkspaceError(f'"{path}" is the top of the workspace, not a file')
        return parts

    @contextlib.contextmanager
    def _directory(self, parts: list[str], *, create: bool, path: str) -> Iterator[int]:
        """An open descriptor of the folder `parts`, reached one part at a time without following symlinks (and
        made when `create`)."""
        try:
            fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY)
        except FileNotFoundError:
            raise WorkspaceError(f'"{path}" does not exist (the workspace is empty)') from None
        try:
            for index, part in enumerate(parts):
                try:
                    child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise WorkspaceError(f'"{"/".join(parts[:index + 1])}" does not exist') from None
                    os.mkdir(part, 0o755, dir_fd=fd)
                    child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                except OSError as err:
                    raise WorkspaceError(self._why_not_folder(fd, part, parts[:index + 1], err)) from None
                os.close(fd)
                fd = child
            yield fd
        finally:
            os.close(fd)

    def _why_not_folder(self, fd: int, part: str, parts: list[str], err: OSError) -> str:
        name = "/".join(parts)
        if err.errno in (errno.ELOOP, errno.ENOTDIR):
            try:
                info = os.stat(part, dir_fd=fd, follow_symlinks=False)
            except OSError:
                return f'"{name}" changed while it was used; try again'
            if stat.S_ISLNK(info.st_mode):
                return f'"{name}" became a symlink while it was used; nothing was done'
            return f'"{name}" is {_kind(info.st_mode)}, not a folder'
        return f'"{name}": {err.strerror}'

    def _read_bytes(self, parts: list[str], path: str) -> bytes:
        """A regular file's bytes, opened without following a symlink or blocking on a FIFO, checked after opening."""
        name = "/".join(parts)
        with self._directory(parts[:-1], create=False, path=path) as dir_fd:
            try:
                before = os.stat(parts[-1], dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                raise WorkspaceError(f'"{name}" does not exist: list the workspace to see its files') from None
            if stat.S_ISLNK(before.st_mode):
                raise WorkspaceError(f'"{name}" became a symlink while it was used; nothing was done')
            self._check_file(before, name, "read")  # a device or a FIFO is never even opened
            try:
                fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY, dir_fd=dir_fd)
            except OSError as err:
                raise WorkspaceError(f'"{name}" changed while it was used ({err.strerror}); nothing was done') \
                    from None
            try:
                info = os.fstat(fd)
                self._check_file(info, name, "read")
                if info.st_size > self.limits.file_bytes:
                    raise WorkspaceError(f"{name} is {info.st_size} bytes, over the cap of {self.limits.file_bytes} "
                                         "bytes per file; it cannot be read here")
                with os.fdopen(os.dup(fd), "rb") as handle:
                    data = handle.read(self.limits.file_bytes + 1)
            finally:
                os.close(fd)
        if b"\x00" in data[:_BINARY_PROBE]:
            raise WorkspaceError(f"{name} looks binary (it holds NUL bytes); only text files can be read")
        return data

    def _check_file(self, info: os.stat_result, name: str, doing: str, links: bool = False) -> None:
        """Only regular files; and, unless `links` (a write replaces the name, never the linked file), no hard
        links."""
        if stat.S_ISDIR(info.st_mode):
            raise WorkspaceError(f'"{name}" is a folder: list it with workspace_list')
        if not stat.S_ISREG(info.st_mode):
            raise WorkspaceError(f'"{name}" is {_kind(info.st_mode)}, not a regular file; only regular files can be '
                                 f"{doing}")
        if info.st_nlink > 1 and not links:
            raise WorkspaceError(f'"{name}" is a hard link (it may be a file outside the workspace); it cannot be '
                                 f"{doing} here")

    def _existing(self, dir_fd: int, part: str, name: str, data: bytes) -> tuple[int, bool] | None:
        """(size, same as `data`) of the file to be written (None: no such file); refused when it is not a regular
        file."""
        try:
            info = os.stat(part, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        if stat.S_ISLNK(info.st_mode):
            raise WorkspaceError(f'"{name}" became a symlink while it was used; nothing was written')
        self._check_file(info, name, "written", links=True)
        if info.st_size != len(data):
            return info.st_size, False
        fd = os.open(part, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
        with os.fdopen(fd, "rb") as handle:
            return info.st_size, handle.read(len(data) + 1) == data

    def _replace(self, dir_fd: int, part: str, data: bytes, name: str) -> None:
        """Write `data` to a temporary file beside `part`, then rename it over `part` (atomic on one filesystem)."""
        temp = f".{part}.jr2-tmp"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=dir_fd)
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=dir_fd)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(temp, part, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except OSError as err:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=dir_fd)
            raise WorkspaceError(f"{name} could not be written: {err.strerror}; nothing was written") from None

    def _walk(self, parts: list[str]) -> list[tuple[str, int, str]]:
        """(path from the top, size, "file" | "other") of every entry under the folder `parts`, sorted by path;
        folders are walked into, symlinks are "other" and never followed."""
        start = self.folder.joinpath(*parts)
        if parts:
            try:
                info = os.lstat(start)
            except FileNotFoundError:
                raise WorkspaceError(f'"{"/".join(parts)}" does not exist') from None
            if not stat.S_ISDIR(info.st_mode):
                raise WorkspaceError(f'"{"/".join(parts)}" is {_kind(info.st_mode)}, not a folder')
        elif not start.is_dir():
            return []
        found: list[tuple[str, int, str]] = []
        stack = [start]
        while stack:
            here = stack.pop()
            try:
                entries = list(os.scandir(here))
            except OSError:
                continue
            for entry in entries:
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISDIR(info.st_mode):
                    stack.append(Path(entry.path))
                    continue
                rel = os.path.relpath(entry.path, self.folder).replace(os.sep, "/")
                found.append((rel, info.st_size, "file") if stat.S_ISREG(info.st_mode) else (rel, 0, "other"))
        return sorted(found)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device file"
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"
