"""Replay's steps are swapped in place: an htmx request gets the panes alone, with the same controls and step."""

from __future__ import annotations

import re
from typing import Any

from tests.console.conftest import logged_in


def unmasked(html: str) -> str:
    """The fragment without its CSRF token's value, which Django masks afresh in every response."""
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', 'name="csrfmiddlewaretoken"', html)


def test_an_htmx_step_gets_the_panes_alone(observer: Any, runs: dict[str, str]) -> None:
    client = logged_in(observer)
    url = f"/runs/{runs['done']}/replay/?step=2"
    whole = client.get(url).content.decode()
    panes = client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert whole.startswith("<!doctype html>") and 'id="replay-panes"' in whole
    assert "<!doctype" not in panes and "<body" not in panes and "</main>" not in panes
    start = panes.index('<div id="replay-panes"')
    assert 'data-step="2"' in panes[start : start + 400] and 'hx-boost="true"' in panes[start : start + 400]
    same = whole[whole.index('<div id="replay-panes"') : whole.index("</main>")]
    assert unmasked(panes[start:]).strip() == unmasked(same).strip()
    # a restored history entry (the page was not cached) is the whole page again
    restored = client.get(url, headers={"HX-Request": "true", "HX-History-Restore-Request": "true"})
    assert restored.content.decode().startswith("<!doctype html>")


def test_links_that_leave_the_replay_are_not_boosted(observer: Any, runs: dict[str, str]) -> None:
    page = logged_in(observer).get(f"/runs/{runs['done']}/replay/?step=2").content.decode()
    assert f'href="/runs/{runs["done"]}/" hx-boost="false"' in page
    assert 'id="fork-here" hx-boost="false"' in page
