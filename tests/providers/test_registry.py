"""`provider_for`: the model prefix picks a provider class by dotted path, imported lazily, one instance each."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import engine
from engine.runtime.providers import DEFAULT_PROVIDERS, aclose_all, provider_for, reset_providers, split_model
from engine.runtime.providers.base import ModelReply, ModelRequest, Provider, ProviderError


class EchoProvider(Provider):
    """A provider a deployment could add through JR2_PROVIDERS."""

    closed = 0

    async def complete(self, request: ModelRequest) -> ModelReply:
        return ModelReply(text=request.model, tool_calls=(), stop_reason="end_turn")

    async def aclose(self) -> None:
        EchoProvider.closed += 1


class NotAProvider:
    pass


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    reset_providers()
    yield
    reset_providers()


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("anthropic/claude-haiku-5-5", ("anthropic", "claude-haiku-5-5")),
        ("local/Qwen/Qwen3-8B", ("local", "Qwen/Qwen3-8B")),
        ("script/notes.writer", ("script", "notes.writer")),
    ],
)
def test_split_model(model: str, expected: tuple[str, str]) -> None:
    assert split_model(model) == expected


@pytest.mark.parametrize("model", ["claude", "/claude", "anthropic/", ""])
def test_split_model_refuses_a_string_without_prefix_and_id(model: str) -> None:
    with pytest.raises(ProviderError, match="must be '<provider>/<model id>'"):
        split_model(model)


def test_the_default_prefixes_pick_their_classes() -> None:
    assert type(provider_for("anthropic/x")).__name__ == "AnthropicProvider"
    assert type(provider_for("local/x")).__name__ == "LocalProvider"
    script = provider_for("script/x")
    assert type(script).__name__ == "ScriptProvider" and script.scripted
    assert not provider_for("anthropic/x").scripted


def test_one_instance_per_prefix_until_reset() -> None:
    first = provider_for("script/a")
    assert provider_for("script/b") is first
    reset_providers()
    assert provider_for("script/a") is not first


def test_an_unknown_prefix_names_the_known_ones() -> None:
    with pytest.raises(ProviderError) as caught:
        provider_for("openrouter/some-model")
    assert str(caught.value) == (
        'no provider for the prefix "openrouter" of model "openrouter/some-model": the '
        "known prefixes are anthropic, human, local, mcp, script (setting JR2_PROVIDERS)"
    )


def test_the_setting_adds_and_replaces_providers(settings: Any) -> None:
    settings.JR2_PROVIDERS = {**DEFAULT_PROVIDERS, "echo": f"{__name__}.EchoProvider"}
    assert isinstance(provider_for("echo/anything"), EchoProvider)
    assert type(provider_for("script/x")).__name__ == "ScriptProvider"


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("tests.providers.no_such_module.Provider", "cannot be imported"),
        (f"{__name__}.Missing", "cannot be imported"),
        (f"{__name__}.NotAProvider", "is not a Provider subclass"),
    ],
)
def test_a_bad_dotted_path_is_a_clear_error(settings: Any, path: str, message: str) -> None:
    settings.JR2_PROVIDERS = {"bad": path}
    with pytest.raises(ProviderError, match=message) as caught:
        provider_for("bad/x")
    assert path in str(caught.value)


@pytest.mark.anyio
async def test_aclose_all_closes_every_provider_and_forgets_them(settings: Any) -> None:
    settings.JR2_PROVIDERS = {"echo": f"{__name__}.EchoProvider"}
    before = EchoProvider.closed
    first = provider_for("echo/x")
    await aclose_all()
    assert EchoProvider.closed == before + 1
    assert provider_for("echo/x") is not first


def test_importing_the_providers_package_imports_no_sdk() -> None:
    code = (
        "import sys, engine.runtime.providers, engine.runtime.providers.script; "
        "print(sorted(m for m in ('anthropic', 'openai') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(engine.__file__).parent.parent,
    )
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("sdk", "owner"), [("anthropic", "runtime/providers/anthropic.py"), ("openai", "runtime/providers/local.py")]
)
def test_each_sdk_is_imported_by_one_module_only(sdk: str, owner: str) -> None:
    root = Path(engine.__file__).parent
    importers = sorted(str(path.relative_to(root)) for path in root.rglob("*.py") if sdk in _imports(path))
    assert importers == [owner]


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names
