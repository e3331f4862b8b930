"""Where a command of the command line writes: the management command's stdout and stderr (Django's wrappers,
which add the line endings) and its styles (colours on a terminal, none with --no-color).

    out.line("summary: 2 workflows: 2 ok")        # stdout
    out.json(run)                                 # stdout, indented, then flushed (a follower may be reading)
    out.progress("jr2 run: started run ...")      # stderr, unstyled, flushed: progress, never the answer
"""

from __future__ import annotations

from dataclasses import dataclass
from json import dumps as json_dumps
from typing import Any

__all__ = ["Output"]


@dataclass(frozen=True)
class Output:
    stdout: Any  # django.core.management.base.OutputWrapper
    stderr: Any
    style: Any  # django.core.management.color.Style

    def line(self, text: str = "") -> None:
        self.stdout.write(text)

    def say(self, line: str) -> None:
        """A server process's line, flushed at once (its log is read while it runs)."""
        self.stdout.write(line)
        self.stdout.flush()

    def json(self, value: Any) -> None:
        self.stdout.write(json_dumps(value, indent=2, ensure_ascii=False))
        self.stdout.flush()

    def progress(self, line: str) -> None:
        self.stderr.write(line, style_func=lambda text: text)
        self.stderr.flush()
