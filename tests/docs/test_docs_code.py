"""The code in the documentation runs, so the docs cannot drift from the code.

Every ```python block of docs/**/*.md and README.md runs here. A page's blocks run in order in one fresh module of
their own, so a page can build an example up block by block; the repository is importable and is the working
directory, as a project folder is for a reader. A traceback names the page and the line in it. Blocks that show
output or shell commands are ```text or ```console and do not run.

A ```diff block (a change the reader makes to a shipped file) must apply to the repository as it is.

Reference pages list what an export refuses ("It refuses:", "It raises:"), each with its exact message in a code
span; a `<placeholder>` in it stands for any text. Each listed message must match a string the page's Python
asserts, so the list is proven by the code that runs beside it.

The notes on internals and the README hold sketches of signatures, not programs: they are expected to fail, and
strictly so, so that the day one of them runs its entry here must go.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
import types
from dataclasses import dataclass
from pathlib import Path

import pytest

import engine.core.scripts

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]
RUN = {"python", "py"}
LANGUAGES = RUN | {"text", "console", "sh", "toml", "yaml", "json", "ini", "html", "diff"}

#: Pages whose Python blocks are sketches (a signature, a fragment of a config), with why; owned elsewhere.
SKETCHES = {
    "README.md": "the README's workflow is a sketch (`create_machine({...})`); its owner rewrites the first screen",
    "docs/engine.md": "notes on internals: signatures and config fragments, not programs",
    "docs/statechart.md": "notes on internals: signatures and config fragments, not programs",
}

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")
SNIPPET = re.compile(r'^\s*--8<--\s+"(?P<path>[^"]+)"\s*$')
REFUSES = re.compile(r"^It (?:refuses|raises)\b[^:]*(?:`[^`]*`[^:]*)*:\s*$")
ITEM = re.compile(r"^- ")
CODE_SPAN = re.compile(r"(?P<ticks>`+)\s?(?P<text>.+?)\s?(?P=ticks)(?!`)")
PLACEHOLDER = re.compile(r"<[^<>]+>")


@dataclass(frozen=True)
class Block:
    """One fenced block: its language, its first line in the page (1-based) and its text, dedented."""

    language: str
    line: int
    code: str


def rel(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of a page, in order, also those indented inside admonitions and tabs."""
    found: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        language = opening["info"].split()[0] if opening["info"].strip() else ""
        body: list[str] = []
        i += 1
        while i < len(lines):
            closing = FENCE.match(lines[i])
            if (
                closing
                and closing["fence"][0] == fence[0]
                and len(closing["fence"]) >= len(fence)
                and not closing["info"].strip()
                and len(closing["indent"]) <= len(indent)
            ):
                break
            body.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i].lstrip())
            i += 1
        found.append(Block(language, i - len(body) + 1 if body else i + 1, textwrap.dedent("\n".join(body))))
        i += 1
    return found


def expanded(code: str) -> str:
    """The block with each snippet line (`--8<-- "path"`, as pymdownx.snippets includes a file) replaced by the
    file it names."""
    out = []
    for line in code.splitlines():
        match = SNIPPET.match(line)
        out.append((ROOT / match["path"]).read_text(encoding="utf-8") if match else line)
    return "\n".join(out)


def python_blocks(page: Path) -> list[Block]:
    return [b for b in blocks(page) if b.language in RUN]


def pages_with(kind: str) -> list[object]:
    """The pages that have Python blocks, each a pytest param; sketches are expected to fail, strictly."""
    params: list[object] = []
    for page in PAGES:
        if not python_blocks(page):
            continue
        marks = (
            [pytest.mark.xfail(strict=True, reason=SKETCHES[rel(page)])]
            if kind == "run" and rel(page) in SKETCHES
            else []
        )
        params.append(pytest.param(page, id=rel(page), marks=marks))
    return params


@pytest.fixture
def own_scripts(monkeypatch: pytest.MonkeyPatch) -> None:
    """A page that registers a scripted model (`@scripted("notes.writer")`) does so in a registry of its own, so the
    workflows' own stand-ins are as they were for the tests that follow."""
    monkeypatch.setattr(engine.core.scripts, "_SCRIPTS", dict(engine.core.scripts.scripts()))


@pytest.mark.parametrize("page", pages_with("run"))
def test_the_python_of_the_page_runs(page: Path, own_scripts: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the pages' code runs in the project folder, as a reader runs it
    name = "docs_" + re.sub(r"\W", "_", rel(page).removesuffix(".md"))
    module = types.ModuleType(name)
    module.__file__ = str(page)
    sys.modules[name] = module  # pydantic and dataclasses look a class's module up by name
    try:
        for block in python_blocks(page):
            # Blank lines first, so a traceback's line number is the line in the page.
            code = compile("\n" * (block.line - 1) + expanded(block.code), rel(page), "exec")
            exec(code, module.__dict__)
    finally:
        del sys.modules[name]


def refusals(page: Path) -> list[str]:
    """The messages of the page's "It refuses:" lists: the last code span of each item."""
    listed: list[str] = []
    items: list[str] = []
    collecting = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if REFUSES.match(line):
            collecting = True
        elif collecting and ITEM.match(line):
            items.append(line[2:])
        elif collecting and line.startswith(" ") and line.strip() and items:
            items[-1] += " " + line.strip()
        elif collecting and line.strip():
            collecting = False
    for item in items:
        spans = CODE_SPAN.findall(item)
        assert spans, f"{rel(page)}: a refusal without its message in a code span: {item!r}"
        listed.append(spans[-1][1])
    return listed


def asserted_strings(page: Path) -> set[str]:
    """Every string in the page's Python (the messages its assertions compare with); an f-string with each value
    it formats as a `<placeholder>`, which only a placeholder of the listed message matches."""
    strings: set[str] = set()
    for block in python_blocks(page):
        tree = ast.parse(expanded(block.code))
        parts = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in parts:
                strings.add(node.value)
            elif isinstance(node, ast.JoinedStr):  # an f-string: each value it formats is a <placeholder>
                strings.add("".join(v.value if isinstance(v, ast.Constant) else "<value>" for v in node.values))
    return strings


def refusal_pages() -> list[object]:
    return [pytest.param(page, id=rel(page)) for page in PAGES if refusals(page)]


@pytest.mark.parametrize("page", refusal_pages())
def test_each_listed_refusal_is_a_message_the_page_asserts(page: Path) -> None:
    strings = asserted_strings(page)
    unproven = []
    for message in refusals(page):
        pattern = "".join(
            ".+?" if PLACEHOLDER.fullmatch(part) else re.escape(part)
            for part in re.split(f"({PLACEHOLDER.pattern})", message)
        )
        if not any(re.fullmatch(pattern, s, flags=re.DOTALL) for s in strings):
            unproven.append(message)
    assert not unproven, f"{rel(page)} lists refusals that none of its Python asserts: {unproven}"


@pytest.mark.parametrize(
    "page", [pytest.param(p, id=rel(p)) for p in PAGES if any(b.language == "diff" for b in blocks(p))]
)
def test_each_diff_applies_to_the_repository(page: Path, tmp_path: Path) -> None:
    """A ```diff block tells a reader to change a file of the project: it must apply to that file as it ships, in
    the project `jr2 init` makes when it names one of that project's files, else in this repository."""
    from engine.cli.commands.init import FILES, init

    project = tmp_path / "myproject"
    init(str(project), say=lambda line: None)
    for block in blocks(page):
        if block.language == "diff":
            named = set(re.findall(r"^\+\+\+ b/(\S+)", block.code, flags=re.M))
            checked = subprocess.run(
                ["git", "apply", "--check", "-p1", "-"],
                cwd=project if named and named <= set(FILES) else ROOT,
                input=block.code + "\n",
                text=True,
                capture_output=True,
                check=False,
            )
            assert checked.returncode == 0, f"{rel(page)}, line {block.line}: {checked.stderr}"


@pytest.mark.parametrize("page", [pytest.param(p, id=rel(p)) for p in PAGES])
def test_every_block_names_its_language(page: Path) -> None:
    """A block without a language would be neither run nor known to be output."""
    unnamed = [b.line for b in blocks(page) if b.language not in LANGUAGES]
    assert not unnamed, f"{rel(page)}: fenced blocks without a known language at lines {unnamed}"


def test_the_collector_reads_fences_snippets_and_refusal_lists(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        textwrap.dedent("""\
        # A page

        It refuses:

        - a bad name:
          `define_event: invalid name "<name>"`
        - a `sender` field: ``declares `sender` in its input``

        === "Tab"

            ```python
            x = 1
            ```

        ```text
        not run
        ```
    """)
    )
    found = blocks(page)
    assert [(b.language, b.line, b.code) for b in found] == [("python", 12, "x = 1"), ("text", 16, "not run")]
    assert refusals(page) == ['define_event: invalid name "<name>"', "declares `sender` in its input"]
    assert expanded('--8<-- "workflows/notes.py"') == (ROOT / "workflows" / "notes.py").read_text()
