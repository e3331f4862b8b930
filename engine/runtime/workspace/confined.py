"""The sandbox of a workspace: one folder on disk and the only ways into it (engine/runtime/workspace/sandbox.py's
`Workspace` builds the Agent's tools on it).

Every path an Agent gives is relative to the top of the folder. The sandbox refuses, with the reason, anything that
would leave the folder: an absolute path, a `..` part, a symlink whose target is outside (symlinks that stay inside
are followed), a hard-linked file (it may be a file outside), and anything that is not a regular file or folder
(device files, FIFOs, sockets). The resolved path is then opened one part at a time with `O_NOFOLLOW`, so a symlink
put in its way after the check is refused too. A file is read only up to the cap of `Limits.file_bytes`, and
replaced atomically (a temporary file renamed over the old one).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ConfinedFolder", "Limits", "WorkspaceError"]

_MAX_PART = 200
_MAX_PATH = 1024
_MAX_HOPS = 40
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


class ConfinedFolder:
    """One folder and its sandbox: paths resolved inside it, folders opened one part at a time without following
    symlinks, regular files read and replaced, entries walked. Each refusal is a WorkspaceError with the reason."""

    def __init__(self, folder: Path | str, limits: Limits | None = None) -> None:
        self.folder = Path(os.path.abspath(os.fspath(folder)))
        self.limits = limits or Limits()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.folder)!r})"

    def ensure(self) -> None:
        """Create the folder (and its parents) if it is not there yet."""
        self.folder.mkdir(parents=True, exist_ok=True)

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
            raise WorkspaceError(
                f'"{path}" is an absolute path, which leaves the workspace: give the path from '
                'the top of the workspace, such as "src/app.py"'
            )
        if len(path) > _MAX_PATH:
            raise WorkspaceError(f"a path may be at most {_MAX_PATH} characters; this one has {len(path)}")
        parts = [p for p in path.split("/") if p not in ("", ".")]
        if ".." in parts:
            raise WorkspaceError(
                f'"{path}" holds "..", which leaves the workspace: give the path from the top of the workspace'
            )
        long = next((p for p in parts if len(p) > _MAX_PART), None)
        if long is not None:
            raise WorkspaceError(
                f'a file or folder name may be at most {_MAX_PART} characters; "{long[:40]}..." has {len(long)}'
            )
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
                    return [p for p in normal[len(top) :].split(os.sep) if p not in ("", ".")], True
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
                        raise WorkspaceError(f'"{"/".join(parts[: index + 1])}" does not exist') from None
                    os.mkdir(part, 0o755, dir_fd=fd)
                    child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                except OSError as err:
                    raise WorkspaceError(self._why_not_folder(fd, part, parts[: index + 1], err)) from None
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
                raise WorkspaceError(f'"{name}" changed while it was used ({err.strerror}); nothing was done') from None
            try:
                info = os.fstat(fd)
                self._check_file(info, name, "read")
                if info.st_size > self.limits.file_bytes:
                    raise WorkspaceError(
                        f"{name} is {info.st_size} bytes, over the cap of {self.limits.file_bytes} "
                        "bytes per file; it cannot be read here"
                    )
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
            raise WorkspaceError(
                f'"{name}" is {_kind(info.st_mode)}, not a regular file; only regular files can be {doing}'
            )
        if info.st_nlink > 1 and not links:
            raise WorkspaceError(
                f'"{name}" is a hard link (it may be a file outside the workspace); it cannot be {doing} here'
            )

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
