"""What Anthropic's prompt cache would hold, computed from the breakpoints a Messages request carries.

The fake model server uses it (`ModelServer(prompt_cache=True)`) to report `input_tokens`,
`cache_read_input_tokens` and `cache_creation_input_tokens` the way the API does, so the tests and the benchmark
can see what the provider's breakpoints save. The rules are the API's, as its prompt-caching guide states them:

- the prompt is read in the order tools, system, messages, block by block;
- a block carrying `cache_control` is a breakpoint: the prefix up to and including it is written to the cache;
- at most 4 breakpoints per request (more is a 400);
- a request reads the longest cached prefix that ends at a breakpoint or at one of the 20 blocks before it;
- the cache key is the prefix's content: `cache_control` itself is not part of it, so a breakpoint that moves on
  does not spoil the prefix it left behind, while any changed byte before a breakpoint does.

Tokens are estimated as one per 4 bytes of a block's canonical JSON (at least one per block): exact enough to
compare requests, and deterministic. The cache never expires (a test or a benchmark lasts less than its 5 minutes).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["PromptCache", "CacheUsage", "TooManyBreakpoints", "check_breakpoints", "MAX_BREAKPOINTS", "LOOKBACK_BLOCKS"]

MAX_BREAKPOINTS = 4
LOOKBACK_BLOCKS = 20


class TooManyBreakpoints(ValueError):
    """The request carries more than 4 blocks with `cache_control`; the message is the API's."""


@dataclass(frozen=True)
class CacheUsage:
    """The input side of a reply's usage: tokens at full price, written to the cache, and read from it."""

    input: int
    cache_write: int
    cache_read: int


def _blocks(body: Mapping[str, Any]) -> list[Any]:
    out: list[Any] = list(body.get("tools") or [])
    system = body.get("system")
    if isinstance(system, str):
        out.append({"type": "text", "text": system})
    elif isinstance(system, list):
        out.extend(system)
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, str):
            out.append({"role": message.get("role"), "type": "text", "text": content})
        elif isinstance(content, list):
            # The role is part of what a block means: the same text from the user and the assistant differ.
            out.extend({"role": message.get("role"), **b} if isinstance(b, Mapping) else b for b in content)
    return out


def _marks(blocks: list[Any]) -> list[int]:
    marks = [i for i, b in enumerate(blocks) if isinstance(b, Mapping) and b.get("cache_control")]
    if len(marks) > MAX_BREAKPOINTS:
        raise TooManyBreakpoints(
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {len(marks)}."
        )
    return marks


def check_breakpoints(body: Mapping[str, Any]) -> int:
    """How many breakpoints the request carries; TooManyBreakpoints past the API's limit."""
    return len(_marks(_blocks(body)))


def _key(block: Any) -> bytes:
    if isinstance(block, Mapping):
        block = {k: v for k, v in block.items() if k != "cache_control"}
    return json.dumps(block, sort_keys=True, separators=(",", ":"), default=str).encode()


def _tokens(block_key: bytes) -> int:
    return max(1, len(block_key) // 4)


class PromptCache:
    """One account's cache, shared by every request a server receives (thread-safe)."""

    def __init__(self) -> None:
        self._held: set[bytes] = set()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._held)

    def clear(self) -> None:
        with self._lock:
            self._held.clear()

    def usage(self, body: Mapping[str, Any]) -> CacheUsage:
        """Read and write the cache for one request; what the API would report for its input."""
        blocks = _blocks(body)
        marks = _marks(blocks)
        keys = [_key(b) for b in blocks]
        sizes = [_tokens(k) for k in keys]
        digest = hashlib.sha256(str(body.get("model", "")).encode())
        prefixes: list[bytes] = []
        for key in keys:
            digest.update(hashlib.sha256(key).digest())
            prefixes.append(digest.copy().digest())
        with self._lock:
            hit = 0  # blocks read from the cache
            for mark in marks:
                for end in range(mark, max(-1, mark - LOOKBACK_BLOCKS - 1), -1):
                    if prefixes[end] in self._held:
                        hit = max(hit, end + 1)
                        break
            for mark in marks:
                self._held.add(prefixes[mark])
        written = max(marks, default=-1) + 1
        read = sum(sizes[:hit])
        write = sum(sizes[hit:written]) if written > hit else 0
        return CacheUsage(input=sum(sizes[max(hit, written) :]), cache_write=write, cache_read=read)
