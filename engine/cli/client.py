"""The command line's HTTP client for the JSON API of a running `jr2 up` (sync httpx).

    with Client.connect("status", url=None, token=None) as api:   # --url / $JR2_URL / http://127.0.0.1:8000,
        run = api.get(f"/api/runs/{api.resolve('wfns')}")         # --token / $JR2_TOKEN

Every failure becomes a `CliError` whose message is one line, ready for stderr, with exit code 2:
`jr2 <command>: <HTTP status>: <the API's detail>` for an API error, or that the server is not reachable at <url>
and how to start it.
"""

from __future__ import annotations

import json
import os
from types import TracebackType
from typing import Any

import httpx

__all__ = ["Client", "CliError", "DEFAULT_URL", "one_line", "parse_json"]

DEFAULT_URL = "http://127.0.0.1:8000"
TIMEOUT = 30.0


class CliError(Exception):
    """A failure to show as one line on stderr, then exit with `code` (2: usage or API error)."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def one_line(text: str) -> str:
    """A message on one line: pydantic's multi-line errors joined with "; ", its "For further information" lines
    dropped."""
    lines = [line.strip() for line in str(text).splitlines()]
    kept = [line for line in lines if line and not line.startswith("For further information visit")]
    return "; ".join(kept)


def parse_json(command: str, option: str, text: str | None, default: Any = None) -> Any:
    """The JSON of an option (`--input`): `@FILE` reads a file, `-` reads stdin; bad JSON is a CliError before
    any request is made."""
    if text is None:
        return default
    source = text
    try:
        if text == "-":
            import sys

            source = sys.stdin.read()
        elif text.startswith("@"):
            with open(text[1:], encoding="utf-8") as f:
                source = f.read()
    except OSError as err:
        raise CliError(f"jr2 {command}: {option} {text}: {err.strerror or err}") from err
    try:
        return json.loads(source)
    except ValueError as err:
        raise CliError(f"jr2 {command}: {option} is not JSON ({err}): {source.strip()[:80]!r}") from err


class Client:
    """One command's connection to the API. `command` names the command in every error line."""

    def __init__(
        self,
        command: str,
        url: str,
        token: str | None,
        *,
        timeout: float = TIMEOUT,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.command = command
        self.url = url.rstrip("/")
        self.token = token or None
        headers = {"Accept": "application/json", "User-Agent": "jr2-cli"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        self.http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout, transport=transport)

    @classmethod
    def connect(cls, command: str, url: str | None = None, token: str | None = None) -> Client:
        """`--url` or $JR2_URL or http://127.0.0.1:8000; `--token` or $JR2_TOKEN."""
        return cls(command, url or os.environ.get("JR2_URL") or DEFAULT_URL, token or os.environ.get("JR2_TOKEN"))

    def __enter__(self) -> Client:
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    # -- requests ---------------------------------------------------------------------------------------------

    def get(self, path: str, **params: Any) -> Any:
        return self._request("GET", path, params={k: v for k, v in params.items() if v is not None})

    def post(self, path: str, body: Any = None) -> Any:
        return self._request("POST", path, json=body if body is not None else {})

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.TimeoutException as err:
            raise CliError(
                f"jr2 {self.command}: the server at {self.url} did not answer in time ({type(err).__name__})"
            ) from err
        except httpx.TransportError as err:
            raise CliError(
                f"jr2 {self.command}: the server is not reachable at {self.url} ({one_line(str(err))}); "
                "start it with `jr2 up`, or point --url / JR2_URL at it"
            ) from err
        if response.status_code >= 400:
            raise CliError(f"jr2 {self.command}: {response.status_code}: {self._detail(response)}")
        try:
            return response.json()
        except ValueError as err:
            raise CliError(
                f"jr2 {self.command}: {response.status_code}: the server at {self.url} did not answer "
                f"JSON (is it a jr2 server?): {one_line(response.text)[:120]!r}"
            ) from err

    def _detail(self, response: httpx.Response) -> str:
        try:
            body = response.json()
        except ValueError:
            body = None
        if isinstance(body, dict) and body.get("detail"):
            detail = body["detail"]
            text = detail if isinstance(detail, str) else json.dumps(detail)
        else:
            text = response.text.strip()[:200] or response.reason_phrase
        text = one_line(text)
        if response.status_code == 401 and not self.token:
            text += " (no token was given: pass --token or set JR2_TOKEN)"
        return text

    # -- runs -------------------------------------------------------------------------------------------------

    def resolve(self, prefix: str) -> str:
        """The run id that `prefix` (4 or more of its first characters) names: none or several is a CliError
        (several are listed)."""
        if len(prefix) < 4:
            raise CliError(
                f"jr2 {self.command}: a run id or a prefix of at least 4 characters is needed; got {prefix!r}"
            )
        page = self.get("/api/runs", prefix=prefix, page_size=20)
        rows = page.get("results", [])
        exact = [row for row in rows if row.get("id") == prefix]
        if exact:
            return str(exact[0]["id"])
        if not rows:
            raise CliError(f"jr2 {self.command}: no run id starts with {prefix!r} (see `jr2 runs`)")
        if len(rows) > 1:
            listed = ", ".join(f"{r['id']} ({r.get('workflow')}, {r.get('status')})" for r in rows)
            more = f" and {page['count'] - len(rows)} more" if page.get("count", 0) > len(rows) else ""
            raise CliError(
                f"jr2 {self.command}: {page.get('count', len(rows))} runs start with {prefix!r}: "
                f"{listed}{more}; give more characters"
            )
        return str(rows[0]["id"])
