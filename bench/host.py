"""What machine a benchmark ran on, for its report."""

from __future__ import annotations

import platform
from pathlib import Path

__all__ = ["cpu_model"]


def cpu_model() -> str | None:
    """The CPU's model name from /proc/cpuinfo, else what `platform` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or None
