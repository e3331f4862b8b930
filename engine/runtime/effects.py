"""The Effect runner: the host's one seam for side effects (`run_effect(request) -> EffectOutcome`).

The Session asks for an Effect with `EffectRequested` and takes the result back with `effect_done`/`effect_failed`;
this module does the work in between. It never raises for the Effect's own failures (a non-zero exit, an HTTP 503,
an exception in the function): those are outcomes, with a JSON-ready error a person can read. It does not journal
and does not decide re-runs (at most once unless idempotent): that is the host's job. Cancelling the task that runs
an Effect stops it: a command's whole process group is killed and reaped before `CancelledError` propagates.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import os
import shlex
import signal
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from pydantic import BaseModel

from engine.core.outputs import EffectRequested
from engine.core.slots import EffectSlot
from engine.core.statechart.callables import call_with

__all__ = ["EffectOutcome", "run_effect", "OUTPUT_CAP"]

OUTPUT_CAP = 1024 * 1024
_CHUNK = 64 * 1024
_REAP_WAIT = 5.0


@dataclass(frozen=True)
class EffectOutcome:
    """What an Effect came to: `value` is its output when `ok`, else its error (a dict with a `message`)."""

    ok: bool
    value: Any
    duration_ms: float


class _Failed(Exception):
    """An Effect's own failure, carried to `run_effect` as its error dict."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error["message"])
        self.error = error


async def run_effect(
    request: EffectRequested, slot: EffectSlot | None = None, *, output_cap: int = OUTPUT_CAP, cwd: str | None = None
) -> EffectOutcome:
    """Run one requested Effect and say how it went, without raising for its own failures.

    `slot` is needed for `call` (its `fn`); command and http read `request.spec` and `request.input`. `cwd` is the
    host's working directory for commands (a relative `cwd` in the spec is taken from it). A request the host built
    wrongly (a `call` without its slot, an unknown kind) raises ValueError: that is a bug, not an outcome.
    """
    kind = request.effect_kind
    if kind == "call" and (slot is None or slot.fn is None):
        raise ValueError(f"Effect {request.effect!r} ({request.slot!r}) is a call: run_effect needs its slot")
    if kind not in ("command", "http", "call"):
        raise ValueError(f"Effect {request.effect!r} has unknown kind {kind!r} (command, http or call)")
    start = time.perf_counter()
    try:
        if kind == "command":
            value = await _run_command(request.spec, request.input, output_cap, cwd)
        elif kind == "http":
            value = await _run_http(request.spec, request.input, output_cap)
        else:
            assert slot is not None and slot.fn is not None
            value = await _run_call(slot.fn, request.input)
    except _Failed as failed:
        return EffectOutcome(False, failed.error, _since(start))
    return EffectOutcome(True, value, _since(start))


def _since(start: float) -> float:
    return round((time.perf_counter() - start) * 1000.0, 3)


# -- command ---------------------------------------------------------------------------------------------------


class _Capture:
    """One output stream, kept up to `cap` bytes; the rest is read and dropped so the child never blocks."""

    def __init__(self, cap: int) -> None:
        self.cap, self.data, self.truncated = cap, bytearray(), False

    async def drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(_CHUNK):
            room = self.cap - len(self.data)
            if len(chunk) > room:
                self.truncated = True
            if room > 0:
                self.data += chunk[:room]

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


def _command_plan(
    spec: Mapping[str, Any], input: Any, host_cwd: str | None
) -> tuple[list[str], str | None, dict[str, str], Any]:
    """argv, cwd, env and stdin from the spec and the input, or `_Failed` saying what is wrong with them."""
    if input is not None and not isinstance(input, Mapping):
        raise _Failed(
            {
                "message": "a command Effect's input must be a mapping (args, stdin, env) or nothing; got "
                f"{type(input).__name__}"
            }
        )
    extra = dict(input or {})
    raw = spec.get("argv")
    argv = shlex.split(raw) if isinstance(raw, str) else list(raw or [])
    args = extra.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise _Failed({"message": f"a command Effect's input args must be a list of strings; got {args!r}"})
    argv += args
    if not argv or not all(isinstance(a, str) for a in argv):
        raise _Failed({"message": f"a command Effect needs argv, a list of strings; got {argv!r}"})
    stdin = extra.get("stdin")
    if stdin is not None and not isinstance(stdin, str):
        raise _Failed({"message": f"a command Effect's input stdin must be text; got {type(stdin).__name__}"})
    env = {**os.environ, **dict(spec.get("env") or {}), **dict(extra.get("env") or {})}
    if not all(isinstance(v, str) for v in env.values()):
        raise _Failed({"message": "a command Effect's env values must be strings"})
    where = spec.get("cwd")
    run_cwd = os.path.join(host_cwd, where) if host_cwd and where else (where or host_cwd)
    if run_cwd is not None and not os.path.isdir(run_cwd):
        raise _Failed({"message": f"working directory does not exist: {run_cwd}", "cwd": run_cwd})
    return argv, run_cwd, env, stdin


async def _run_command(spec: Mapping[str, Any], input: Any, cap: int, host_cwd: str | None) -> dict[str, Any]:
    """Run argv in its own process group; the group is killed on timeout or cancel, so grandchildren die too."""
    argv, run_cwd, env, stdin = _command_plan(spec, input, host_cwd)
    timeout = spec.get("timeout")
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=run_cwd,
            env=env,
            start_new_session=True,
            preexec_fn=_die_with_host(),
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except FileNotFoundError:
        raise _Failed({"message": f"command not found: {argv[0]}", "argv": argv}) from None
    except PermissionError:
        raise _Failed({"message": f"command is not executable: {argv[0]}", "argv": argv}) from None
    except (OSError, ValueError, TypeError) as exc:
        raise _Failed({"message": f"could not start {argv[0]}: {exc}", "argv": argv}) from None
    out, err = _Capture(cap), _Capture(cap)
    code: int | None = None
    try:
        async with asyncio.timeout(timeout):
            async with asyncio.TaskGroup() as group:
                assert proc.stdout is not None and proc.stderr is not None
                group.create_task(out.drain(proc.stdout))
                group.create_task(err.drain(proc.stderr))
                if stdin is not None:
                    group.create_task(_feed(proc, stdin.encode("utf-8")))
                await proc.wait()
            code = proc.returncode  # set only once the process has exited and both pipes are read to the end
    except TimeoutError:
        pass
    finally:
        if code is None:  # timed out, cancelled or broke: the leader may be gone while its children still run
            _kill_group(proc.pid)
            with contextlib.suppress(TimeoutError):  # a process that left the group could hold the pipes open
                await asyncio.wait_for(_settle(proc, out, err), _REAP_WAIT)
    streams = _streams(out, err)
    if code is None:
        raise _Failed(
            {
                "message": f"command timed out after {timeout} s: {argv[0]}",
                "argv": argv,
                "timeout": timeout,
                "exit_code": proc.returncode,
                **streams,
            }
        )
    if code != 0:
        raise _Failed(
            {
                "message": f"command exited with code {code}{_signal_name(code)}: {argv[0]}",
                "argv": argv,
                "exit_code": code,
                **streams,
            }
        )
    return {"exit_code": code, **streams}


def _die_with_host() -> Any:
    """On Linux, a command's process is killed when its host process dies (PR_SET_PDEATHSIG): a killed worker's
    run is taken over and its non-idempotent Effect reported as interrupted, which is only true if the command
    cannot go on behind the new host's back. Elsewhere, None."""
    import sys

    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    host = os.getpid()

    def arm() -> None:  # runs in the child, between fork and exec
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() != host:  # the host died before the line above: nobody would send the signal
            os._exit(137)

    return arm


async def _settle(proc: asyncio.subprocess.Process, out: _Capture, err: _Capture) -> None:
    """After the kill: read what the pipes still hold to their end, then reap, so nothing is left open."""
    assert proc.stdout is not None and proc.stderr is not None
    await asyncio.gather(out.drain(proc.stdout), err.drain(proc.stderr))
    await proc.wait()


async def _feed(proc: asyncio.subprocess.Process, data: bytes) -> None:
    """Write the input's stdin and close it; a child that exits without reading it is not an error."""
    assert proc.stdin is not None
    try:
        proc.stdin.write(data)
        await proc.stdin.drain()
        proc.stdin.close()
    except (BrokenPipeError, ConnectionResetError):
        pass


def _kill_group(pgid: int) -> None:
    """SIGKILL the whole group (the process is its leader: start_new_session), so its children go with it."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _signal_name(code: int) -> str:
    """` (signal SIGKILL)` for a negative exit code, so a person sees what stopped the process."""
    try:
        return f" (signal {signal.Signals(-code).name})" if code < 0 else ""
    except ValueError:
        return ""


def _streams(out: _Capture, err: _Capture) -> dict[str, Any]:
    streams: dict[str, Any] = {"stdout": out.text(), "stderr": err.text()}
    if out.truncated:
        streams["stdout_truncated"] = True
    if err.truncated:
        streams["stderr_truncated"] = True
    return streams


# -- http ------------------------------------------------------------------------------------------------------


async def _run_http(spec: Mapping[str, Any], input: Any, cap: int) -> dict[str, Any]:
    """Send the input (if any) as the JSON body; status and body are the output, a status >= 400 is the error."""
    url, method = str(spec.get("url")), str(spec.get("method") or "POST").upper()
    timeout = spec.get("timeout")
    try:
        async with asyncio.timeout(timeout), httpx.AsyncClient(timeout=timeout) as client:
            async with client.stream(method, url, headers=dict(spec.get("headers") or {}), json=input) as response:
                data, truncated = bytearray(), False
                async for chunk in response.aiter_bytes():
                    if len(data) + len(chunk) > cap:
                        data += chunk[: cap - len(data)]
                        truncated = True
                        break
                    data += chunk
    except (TimeoutError, httpx.TimeoutException):
        raise _Failed(
            {"message": f"HTTP {method} {url} timed out after {timeout} s", "url": url, "timeout": timeout}
        ) from None
    except (httpx.HTTPError, httpx.InvalidURL, TypeError, ValueError) as exc:
        raise _Failed({"message": f"HTTP {method} {url} failed: {type(exc).__name__}: {exc}", "url": url}) from None
    body = _http_body(response, bytes(data), truncated)
    value: dict[str, Any] = {"status": response.status_code, "body": body, "headers": dict(response.headers)}
    if truncated:
        value["body_truncated"] = True
    if response.status_code >= 400:
        raise _Failed({"message": f"HTTP {response.status_code} from {url}", "url": url, **value})
    return value


def _http_body(response: httpx.Response, data: bytes, truncated: bool) -> Any:
    """Parsed JSON when the reply says it is JSON (and came whole), else text."""
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if not truncated and (kind == "application/json" or kind.endswith("+json")):
        try:
            return json.loads(data)
        except ValueError:
            pass
    try:
        return data.decode(response.encoding or "utf-8", errors="replace")
    except LookupError:
        return data.decode("utf-8", errors="replace")


# -- call ------------------------------------------------------------------------------------------------------


async def _run_call(fn: Any, input: Any) -> Any:
    """Call the function with the input (by keyword from a mapping, else as the one argument); a plain function
    runs in a thread so it never blocks the loop. Cancelling does not stop a thread that already runs."""
    try:
        if isinstance(input, Mapping):
            available = {"input": input, **input}
            if inspect.iscoroutinefunction(fn):
                result = await call_with(fn, **available)
            else:
                result = await asyncio.to_thread(call_with, fn, **available)
        elif inspect.iscoroutinefunction(fn):
            result = await fn(input)
        else:
            result = await asyncio.to_thread(fn, input)
        if inspect.isawaitable(result):
            result = await result
    except Exception as exc:
        raise _Failed(
            {
                "message": f"{type(exc).__name__}: {exc}",
                "type": type(exc).__name__,
                "traceback": "".join(traceback.format_exception(exc)[-8:]),
            }
        ) from None
    try:
        return _json_ready(result, "the return value")
    except TypeError as exc:
        raise _Failed({"message": f"{getattr(fn, '__qualname__', fn)!s}: {exc}", "type": "TypeError"}) from None


def _json_ready(value: Any, where: str) -> Any:
    """The value as plain JSON (pydantic models dumped, tuples as lists), or TypeError naming what is not."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, (list, tuple)):
        return [_json_ready(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        if not all(isinstance(k, str) for k in value):
            raise TypeError(f"{where} has a key that is not a string, so it is not JSON-serializable")
        return {k: _json_ready(v, f"{where}[{k!r}]") for k, v in value.items()}
    raise TypeError(f"{where} is a {type(value).__name__}, which is not JSON-serializable")
