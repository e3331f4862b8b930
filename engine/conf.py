"""Every setting of jr2, in one table: its name (the environment variable and the Django setting are the same
name), its default, how its text is read, and what it does. jr2/settings.py reads the table (and so does the
workflow loader outside Django); the documentation's settings page is generated from it, so they cannot drift.

The project folder is where a project's workflows and data live: `JR2_HOME` (or `jr2 --project DIR`), else the
folder `jr2` runs in. Its `workflows/` are the Workflows, and `.jr2/` holds the SQLite database and the Agents'
workspaces. Nothing is ever written inside the installed package.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Setting", "SETTINGS", "SETTING", "project_dir", "data_dir", "read", "GROUPS"]


def project_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The project folder: `JR2_HOME`, else the current folder."""
    environ = os.environ if environ is None else environ
    return Path(environ.get("JR2_HOME") or os.getcwd()).expanduser().resolve()


def data_dir(environ: Mapping[str, str] | None = None) -> Path:
    """`<project>/.jr2/`: the database and the workspaces."""
    return project_dir(environ) / ".jr2"


def _bool(text: str) -> bool:
    if text not in ("0", "1", ""):
        raise ValueError(f"must be 1 or 0, not {text!r}")
    return text == "1"


def _list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _json(text: str) -> Any:
    return json.loads(text) if text.strip() else None


_READERS: dict[str, Callable[[str], Any]] = {
    "text": str,
    "int": int,
    "float": float,
    "flag": _bool,
    "list": _list,
    "json": _json,
    "path": lambda text: str(Path(text).expanduser().resolve()),
}


@dataclass(frozen=True)
class Setting:
    """One setting. `default` is a value, or a function of the environment (for the project's paths)."""

    name: str
    kind: str
    default: Any
    doc: str
    group: str

    def default_for(self, environ: Mapping[str, str]) -> Any:
        return self.default(environ) if callable(self.default) else self.default

    @property
    def default_text(self) -> str:
        """The default as the documentation shows it."""
        if callable(self.default):
            return (self.default.__doc__ or "").strip()
        if self.kind == "flag":
            return "1" if self.default else "0"
        if self.kind == "list":
            return ",".join(self.default)
        if self.kind == "json":
            return json.dumps(self.default) if self.default is not None else "(none)"
        return "(none)" if self.default in (None, "") else str(self.default)


def read(setting: Setting, environ: Mapping[str, str] | None = None) -> Any:
    """The setting's value from the environment, else its default. A value that does not read as its kind is
    refused naming the setting, so a typo stops the process at start, not later."""
    environ = os.environ if environ is None else environ
    text = environ.get(setting.name)
    if text is None or (text == "" and (setting.kind not in ("text", "flag") or setting.default is None)):
        return setting.default_for(environ)
    try:
        value = _READERS[setting.kind](text)
    except ValueError as err:
        raise ValueError(f"the setting {setting.name}={text!r} is not valid: {err}") from err
    return setting.default_for(environ) if value is None else value


def _sqlite(environ: Mapping[str, str]) -> str:
    """`<project>/.jr2/db.sqlite3`"""
    return str(data_dir(environ) / "db.sqlite3")


def _workflows(environ: Mapping[str, str]) -> str:
    """`<project>/workflows`"""
    return str(project_dir(environ) / "workflows")


def _workspaces(environ: Mapping[str, str]) -> str:
    """`workspaces/` beside the SQLite file: `<project>/.jr2/workspaces`"""
    return str(Path(read(SETTING["JR2_SQLITE_PATH"], environ)).parent / "workspaces")


GROUPS = (
    "The project",
    "Serving",
    "The database and the fleet",
    "Models",
    "Runs",
    "Reaching people",
    "Security",
    "Telemetry",
)

_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)

SETTINGS: tuple[Setting, ...] = (
    Setting(
        "JR2_HOME",
        "path",
        lambda environ: str(project_dir(environ)),
        "The project folder (`jr2 --project DIR` sets it). Its `workflows/` are the Workflows; its `.jr2/` holds "
        "the database and the workspaces.",
        "The project",
    ),
    Setting(
        "JR2_WORKFLOWS",
        "path",
        _workflows,
        "The folder of the Workflows: each module in it that defines `machine` is one, named after its file.",
        "The project",
    ),
    Setting("JR2_SQLITE_PATH", "path", _sqlite, "The SQLite database, when `DATABASE_URL` is not set.", "The project"),
    Setting(
        "JR2_WORKSPACE_ROOT",
        "path",
        _workspaces,
        'Where Agents\' workspaces are (`agent(..., workspace="run" | "shared")`): one folder per run.',
        "The project",
    ),
    Setting(
        "JR2_WORKSPACE_LIMITS",
        "json",
        {},
        "Caps on a workspace, as JSON: `file_bytes`, `read_bytes`, `total_bytes`, `files`.",
        "The project",
    ),
    Setting(
        "JR2_DEBUG",
        "flag",
        False,
        "`1` turns on Django's debug pages (`jr2 up --debug` too). Never on a server others can reach: a debug "
        "page shows the settings.",
        "Serving",
    ),
    Setting(
        "JR2_SECRET_KEY",
        "text",
        "jr2-dev-only-not-a-secret",
        "Django's secret key. The default is for one machine only; production settings refuse it.",
        "Serving",
    ),
    Setting(
        "JR2_ALLOWED_HOSTS",
        "list",
        ["localhost", "127.0.0.1"],
        "The host names the Console and the API answer to, comma-separated.",
        "Serving",
    ),
    Setting(
        "JR2_CONSOLE_OPEN_READS",
        "flag",
        False,
        "`1` lets anyone read the Console without logging in; acting always needs a permission.",
        "Serving",
    ),
    Setting("JR2_OPEN_READS", "flag", False, "`1` lets the JSON API's reads go without a token.", "Serving"),
    Setting(
        "DATABASE_URL",
        "text",
        "",
        "The database: `postgres://...` for the fleet, `sqlite:///path`; unset, the project's SQLite file.",
        "The database and the fleet",
    ),
    Setting(
        "REDIS_URL",
        "text",
        "",
        "Redis, for the channel layer and the cache of a fleet of processes; unset, both are in memory.",
        "The database and the fleet",
    ),
    Setting(
        "JR2_SNAPSHOT_EVERY",
        "int",
        50,
        "How often a run's whole Session is snapshotted, in journal entries (a resume starts there).",
        "The database and the fleet",
    ),
    Setting(
        "JR2_LEASE_SECONDS",
        "float",
        15.0,
        "How long a host's lease on a run lasts: a dead worker's runs are taken over this long after its last renewal.",
        "The database and the fleet",
    ),
    Setting(
        "JR2_HOST_ID",
        "text",
        "",
        "Who this host is in lease rows; unset, `<host name>:up`, or `<host name>:<role>:<pid>` for `jr2 worker` "
        "and `jr2 web`.",
        "The database and the fleet",
    ),
    Setting(
        "JR2_SCAN_SECONDS",
        "float",
        1.0,
        "How often a worker looks for runs to claim and for inputs relayed to it without being woken.",
        "The database and the fleet",
    ),
    Setting("JR2_CLAIM_BATCH", "int", 25, "How many runs a worker claims at a time.", "The database and the fleet"),
    Setting(
        "JR2_MAX_RUNS",
        "int",
        10000,
        "How many runs a worker drives at most (parked runs, waiting without a driver, not counted).",
        "The database and the fleet",
    ),
    Setting(
        "JR2_PARK_SECONDS",
        "float",
        30.0,
        "How long a run that only waits on outside input keeps its driver in memory (seconds) before it is "
        "parked, its id and lease only, and taken up again from the database when an input comes; 0: at once, "
        "a negative value: never.",
        "The database and the fleet",
    ),
    Setting(
        "JR2_PG_PREPARED",
        "flag",
        True,
        "On PostgreSQL, a host writes its steps with prepared statements (bound on the server, prepared once per "
        "connection), which saves the server parsing and planning them at every step. `0` for a connection pooler "
        "in transaction mode that cannot keep prepared statements (PgBouncer before 1.21, or without "
        "`max_prepared_statements`).",
        "The database and the fleet",
    ),
    Setting(
        "JR2_GC_FREEZE",
        "flag",
        True,
        "When the first host of a process starts, what is alive then (Django, the workflows, the modules) is moved out "
        "of the garbage collector's sight (`gc.freeze()`), so its collections stop walking it again at every run's "
        "steps. `0` to leave the collector as it is, in a process that embeds a host and makes cyclic garbage "
        "of what it held before.",
        "The database and the fleet",
    ),
    Setting(
        "JR2_RELAY_WAIT",
        "float",
        2.0,
        "How long a request that sends a run an input (a Gate answer, a cancel, a seat change, a pick) waits for it "
        "to be delivered before it answers 202 with the input's address (seconds); the input is kept and delivered "
        "in order when a worker holds the run.",
        "The database and the fleet",
    ),
    Setting(
        "JR2_DRAIN_SECONDS",
        "float",
        10.0,
        "How long a worker draining on SIGTERM lets running Effects finish (seconds).",
        "The database and the fleet",
    ),
    Setting(
        "JR2_PROVIDERS",
        "json",
        {
            "anthropic": "engine.runtime.providers.anthropic.AnthropicProvider",
            "local": "engine.runtime.providers.local.LocalProvider",
            "script": "engine.runtime.providers.script.ScriptProvider",
            "human": "engine.runtime.providers.human.HumanProvider",
            "mcp": "engine.runtime.providers.mcp_seat.McpSeatProvider",
        },
        'Which class answers each model prefix (`agent(model="<prefix>/<id>")`), as JSON of dotted paths.',
        "Models",
    ),
    Setting(
        "JR2_ANTHROPIC_BASE_URL",
        "text",
        None,
        "Another address for the Anthropic API (a proxy, or a local fake server in the tests).",
        "Models",
    ),
    Setting(
        "JR2_LOCAL_BASE_URL",
        "text",
        "http://127.0.0.1:8080/v1",
        "The OpenAI-compatible server of `local/...` models (vLLM, llama.cpp's server, Ollama).",
        "Models",
    ),
    Setting("JR2_LOCAL_API_KEY", "text", "not-needed", "The API key the local server wants, if any.", "Models"),
    Setting("JR2_PROVIDER_MAX_RETRIES", "int", 3, "How many times a failed model request is retried.", "Models"),
    Setting(
        "JR2_MCP_IDLE_SECONDS",
        "int",
        600,
        "An MCP session holding an Agent's seat gives it back to the Agent's model after this many seconds with no "
        "request.",
        "Runs",
    ),
    Setting("JR2_PROVIDER_TIMEOUT", "float", 600.0, "How long a model request may take (seconds).", "Models"),
    Setting(
        "JR2_MODEL_OVERRIDE",
        "text",
        "",
        'Play Agents on another model than their workflow declares, as JSON: `{"<workflow>.<agent>": "<model>"}`.',
        "Models",
    ),
    Setting(
        "JR2_SCRIPTED",
        "flag",
        False,
        '`1`: every Agent that has a scripted stand-in (`@scripted("<workflow>.<agent>")`) uses it, key or '
        "not. Without a key, the stand-in plays anyway, and the Console says so.",
        "Models",
    ),
    Setting(
        "JR2_CLAIM_MINUTES",
        "float",
        15.0,
        "How long a claim holds a Gate for the person who claimed it (minutes): meanwhile only they may answer it.",
        "Runs",
    ),
    Setting(
        "JR2_PUBLIC_URL",
        "text",
        "http://localhost:8000",
        "The Console's address as people reach it: one-tap links and the links in webhooks start with it.",
        "Reaching people",
    ),
    Setting("EMAIL_HOST", "text", "localhost", "The SMTP server Gate emails go through.", "Reaching people"),
    Setting("EMAIL_PORT", "int", 25, "Its port.", "Reaching people"),
    Setting("EMAIL_HOST_USER", "text", "", "The user to log in to it as, if it wants one.", "Reaching people"),
    Setting("EMAIL_HOST_PASSWORD", "text", "", "That user's password.", "Reaching people"),
    Setting("EMAIL_USE_TLS", "flag", False, "`1`: talk to it over STARTTLS.", "Reaching people"),
    Setting("DEFAULT_FROM_EMAIL", "text", "jr2@localhost", "Who Gate emails are from.", "Reaching people"),
    Setting(
        "JR2_NOTIFY_DIGEST_MINUTES",
        "float",
        0.0,
        "With a number of minutes, a person gets one email per period listing the Gates that opened for them, "
        "instead of one per Gate. `0`: one email per Gate, at once.",
        "Reaching people",
    ),
    Setting(
        "JR2_LINK_HOURS",
        "float",
        72.0,
        "How long a one-tap link in a Gate email lasts at most (hours); it ends with the Gate in any case.",
        "Reaching people",
    ),
    Setting(
        "JR2_WEBHOOKS",
        "json",
        [],
        'Webhook endpoints, as a JSON list of `{"url": ..., "secret": ..., "events": [...]}` (and optionally '
        '`"slack": true`); events are `gate.opened`, `gate.assigned`, `gate.claimed`, `gate.answered`, '
        "`run.ended`. Endpoints can be listed in the admin too.",
        "Reaching people",
    ),
    Setting(
        "JR2_NOTIFY_RETRY_SECONDS",
        "float",
        5.0,
        "The first wait before a failed webhook or email is tried again (seconds); each later wait doubles, up to "
        "an hour.",
        "Reaching people",
    ),
    Setting(
        "JR2_NOTIFY_TRIES",
        "int",
        12,
        "How many times a webhook or email is tried before it is marked failed (the Console can send it again).",
        "Reaching people",
    ),
    Setting(
        "JR2_CSP",
        "text",
        _CSP,
        "The Content-Security-Policy of every page: no inline script, no eval. Empty sends none.",
        "Security",
    ),
    Setting(
        "JR2_RATE_LOGIN",
        "text",
        "10/300",
        "Failed logins allowed per address and per username, as `<failures>/<seconds>`; then 429.",
        "Security",
    ),
    Setting(
        "JR2_RATE_TOKEN",
        "text",
        "60/60",
        "Wrong API tokens allowed per address, as `<failures>/<seconds>`; then 429.",
        "Security",
    ),
    Setting(
        "JR2_TOKEN_CACHE_SECONDS",
        "float",
        2.0,
        "How long a web process trusts an API token it has checked (seconds) before it reads the token, its user "
        "and their permissions from the database again: a token revoked, a user deactivated or a permission "
        "changed elsewhere is refused at most this long after; at once in the process that changed it. 0: read "
        "them on every call.",
        "Security",
    ),
    Setting(
        "JR2_BEHIND_PROXY",
        "flag",
        False,
        "`1` behind a reverse proxy: the client's address is the last of X-Forwarded-For, and X-Forwarded-Proto "
        "says whether the request came over HTTPS.",
        "Security",
    ),
    Setting(
        "JR2_OTEL",
        "flag",
        False,
        "`1` turns tracing on with the SDK's defaults even without `OTEL_EXPORTER_OTLP_ENDPOINT` (which turns it on "
        "too). Everything else is the standard `OTEL_*` variables: endpoint, headers, service name, "
        "`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` for payloads.",
        "Telemetry",
    ),
    Setting(
        "JR2_METRICS_OPEN",
        "flag",
        False,
        "`1` serves `/metrics` (Prometheus' text format) to anyone who can reach it; otherwise it needs "
        "`Authorization: Bearer <API token>`.",
        "Telemetry",
    ),
)

#: The table by name.
SETTING: dict[str, Setting] = {setting.name: setting for setting in SETTINGS}
