"""mkdocs hooks: the pages that are generated from the code, so they cannot drift from it.

- reference/cli.md: every `jr2` command and option, from the command's own argparse parser;
- reference/settings.md: every setting, from the one table in engine/conf.py;
- layout.md: the picture of the layers, drawn by graphviz from docs/layout.dot.
Each page keeps its own words; a marker comment (`<!-- generated: cli -->`) is replaced by what the code says.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    for name, make in (("cli", _cli), ("settings", _settings), ("layers", _layers)):
        marker = f"<!-- generated: {name} -->"
        if marker in markdown:
            markdown = markdown.replace(marker, make())
    return markdown


# -- the jr2 command -------------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "jr2.settings")
    import django

    django.setup()
    from engine.management.commands.jr2 import Command

    return Command().create_parser("jr2", "jr2")


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _options(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        if action.dest in (
            "verbosity",
            "settings",
            "pythonpath",
            "traceback",
            "no_color",
            "force_color",
            "skip_checks",
            "version",
        ):
            continue  # Django's own options of every command
        name = ", ".join(f"`{o}`" for o in action.option_strings) or f"`{action.metavar or action.dest}`"
        if action.option_strings and action.nargs != 0:
            name += f" `{action.metavar or action.dest.upper()}`"
        default = (
            "" if action.default in (None, False, argparse.SUPPRESS) or action.nargs == 0 else f"`{action.default}`"
        )
        rows.append(f"| {name} | {_cell(action.help or '')} | {default} |")
    if not rows:
        return []
    return ["| argument | what it is | default |", "| --- | --- | --- |", *rows, ""]


def _command(prefix: str, name: str, parser: argparse.ArgumentParser, level: int) -> list[str]:
    usage = parser.format_usage().removeprefix("usage: ").strip()
    lines = [f"{'#' * level} `{prefix} {name}`", "", _cell(parser.description or ""), "", "```text", usage, "```", ""]
    lines += _options(parser)
    if parser.epilog:
        lines += [parser.epilog.replace("\n", " "), ""]
    for sub, subparser in _subparsers(parser).items():
        lines += _command(f"{prefix} {name}", sub, subparser, level + 1)
    return lines


def _cli() -> str:
    parser = _parser()
    lines = ["```text", parser.format_usage().removeprefix("usage: ").strip(), "```", ""]
    for name, sub in _subparsers(parser).items():
        lines += _command("jr2", name, sub, 2)
    return "\n".join(lines)


# -- settings ----------------------------------------------------------------------------------------------------


def _settings() -> str:
    from engine.conf import GROUPS, SETTINGS

    lines: list[str] = []
    for group in GROUPS:
        lines += [f"## {group}", "", "| setting | default | what it does |", "| --- | --- | --- |"]
        for setting in SETTINGS:
            if setting.group == group:
                default = setting.default_text
                if "\n" in default or len(default) > 60:
                    default = default[:57] + "…"
                lines.append(f"| `{setting.name}` | `{_cell(default)}` | {_cell(setting.doc)} |")
        lines.append("")
    return "\n".join(lines)


# -- the layers ----------------------------------------------------------------------------------------------


def _layers() -> str:
    import graphviz

    svg = graphviz.Source((ROOT / "docs" / "layout.dot").read_text()).pipe(format="svg").decode()
    return '<div class="layers">' + svg[svg.index("<svg") :] + "</div>"
