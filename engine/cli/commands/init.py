"""`jr2 init DIR`: a project folder of one's own, ready for `jr2 check` and `jr2 up`.

It holds `workflows/notes.py` (the example of the documentation, commented as a tutorial), its scripted stand-in
(`workflows/_stand_ins.py`, so it runs with no API key), a `.gitignore` for `.jr2/` (the database and the
workspaces) and a short README with the next commands. It never overwrites a file: one that exists is named and
nothing is written. Needs no database and no settings: `jr2 init` runs before Django is set up.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from engine.cli.client import CliError

__all__ = ["init_arguments", "init", "TEMPLATE", "FILES"]

#: The project's files, from the package (engine/cli/project_template/, names ending in -tpl so no tool imports them).
TEMPLATE = Path(__file__).resolve().parent.parent / "project_template"
FILES = {
    "workflows/notes.py": "workflows/notes.py-tpl",
    "workflows/_stand_ins.py": "workflows/_stand_ins.py-tpl",
    ".gitignore": "gitignore-tpl",
    "README.md": "README.md-tpl",
}


def init_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "directory", metavar="DIR", help="the project folder to make (it may exist, if empty of these files)"
    )


def init(directory: str, say: object = print) -> list[Path]:
    """Write the project's files into `directory`; CliError (exit 1) names the files that exist already."""
    root = Path(directory).expanduser().resolve()
    if root.exists() and not root.is_dir():
        raise CliError(f"jr2 init: {root} exists and is not a folder", 1)
    existing = [name for name in FILES if (root / name).exists()]
    if existing:
        names = ", ".join(str(root / name) for name in existing)
        verb = "exists" if len(existing) == 1 else "exist"
        raise CliError(f"jr2 init: {names} already {verb}; nothing was written (jr2 init never overwrites a file)", 1)
    written = []
    for name, source in FILES.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        text = (TEMPLATE / source).read_text(encoding="utf-8").replace("{name}", root.name)
        target.write_text(text.replace("{{", "{").replace("}}", "}") if name == "README.md" else text, encoding="utf-8")
        written.append(target)
    lines = [f"jr2 init: made the project {root}", *(f"  {path.relative_to(root)}" for path in written), "next:"]
    shown = directory if Path(directory) != Path(".") else "."
    if shown != ".":
        lines.append(f"  cd {shown}")
    lines += [
        "  jr2 check     # the workflows: who may send what",
        "  jr2 up        # the Console; it prints a link that logs you in",
    ]
    for line in lines:
        say(line)  # type: ignore[operator]
    return written
