"""Cost and time per state (console/pages/costs.py, graph.overlay_svg and the section on the workflow and run pages).

The exact numbers come from rows written here with chosen tokens, latencies and durations (so every percentile is
known); the real runs come from a Host with scripted Agents (tests/console/conftest.py: code_review's Effects) and
from the fake model server (real token numbers through the Anthropic SDK)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from typing import Any

import pytest
from django.utils import timezone

from console.pages.costs import StateCost, cost_table, fmt_ms, heat_of, percentile, sort_costs, state_costs, titles_of
from console.pages.regions import run_regions
from engine import Machine, agent, effect, jr2_setup
from engine.models import EffectRecord, ModelCall, Run, TurnRecord
from engine.runtime import graph
from engine.runtime.graph import heat_level, lit_svg, machine_svg, overlay_svg
from engine.runtime.host import Host
from engine.runtime.providers import reset_providers
from tests.console.conftest import NOTES_DOOR, SVG, ev, logged_in, state_groups, user_in
from tests.fakes.model_server import ModelServer, tool_call
from tests.runtime.hosting import hosted, status, until
from workflows import code_review, notes

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def empty_cache() -> None:
    graph.clear_cache()


# -- a Machine and rows with known numbers ----------------------------------------------------------------------


def shop() -> Machine:
    """An Agent on a compound state, an Effect below it in a state with an `id` of its own that reads like another
    state's path (the runtime writes that id for an Effect, not the path), a child Machine with its own Agent, and
    an Agent state nothing ever runs in."""
    research = jr2_setup(
        events=[ev("found")],
        actors={
            "scout": agent(model="script/scout", instructions="Look things up."),
        },
    ).create_machine(
        {
            "id": "research",
            "initial": "looking",
            "states": {"looking": {"invoke": {"src": "scout"}, "on": {"found": "done"}}, "done": {"type": "final"}},
        }
    )
    return jr2_setup(
        events=[ev("check"), ev("study"), ev("rest")],
        actors={
            "clerk": agent(model="script/clerk", instructions="Sell."),
            "stock": effect.command(["true"]),
            "research": research,
            "idler": agent(model="script/idler", instructions="Rest."),
        },
    ).create_machine(
        {
            "id": "shop",
            "initial": "selling",
            "states": {
                "selling": {
                    "invoke": {"src": "clerk"},
                    "initial": "talking",
                    "on": {"study": "studying", "rest": "resting"},
                    "states": {
                        "talking": {"on": {"check": "checking"}},
                        "checking": {"id": "shop.stock", "invoke": {"src": "stock", "onDone": "talking"}},
                    },
                },
                "studying": {"invoke": {"src": "research", "id": "study", "onDone": "done"}},
                "resting": {"invoke": {"src": "idler"}},
                "done": {"type": "final"},
            },
        }
    )


NOW = timezone.now()


def a_run(workflow: str = "shop", **fields: Any) -> Run:
    return Run.objects.create(workflow=workflow, digest="d", **{"status": "done", **fields})


def a_turn(run: Run, turn: str, state: str, agent_: str = "clerk") -> TurnRecord:
    return TurnRecord.objects.create(
        run=run,
        turn=turn,
        agent=agent_,
        state=state,
        model="script/x",
        declared_model="script/x",
        conversation=turn,
        started_at=NOW,
    )


def calls(turn: TurnRecord, *latencies: float | None, tokens: tuple[int, int, int, int] = (0, 0, 0, 0)) -> None:
    """One ModelCall per latency (None: still in flight), each with `tokens` (in, out, cache read, cache write)."""
    for latency in latencies:
        seq = ModelCall.objects.filter(run=turn.run).count() + 1
        ModelCall.objects.create(
            run=turn.run,
            turn=turn,
            seq=seq,
            model="script/x",
            request={},
            messages=1,
            latency_ms=latency,
            started_at=NOW,
            input_tokens=tokens[0],
            output_tokens=tokens[1],
            cache_read_tokens=tokens[2],
            cache_write_tokens=tokens[3],
            status="in_flight" if latency is None else "done",
        )


def an_effect(run: Run, effect_id: str, state: str, duration: float | None) -> EffectRecord:
    return EffectRecord.objects.create(
        run=run,
        effect=effect_id,
        slot="stock",
        kind="command",
        state=state,
        duration_ms=duration,
        requested_at=NOW,
        status="cancelled" if duration is None else "done",
    )


@pytest.fixture
def shop_runs() -> dict[str, Run]:
    """Two runs of shop with every latency and duration chosen, and a run of another workflow that must not count."""
    first, second, other = a_run(), a_run(), a_run("notes")
    t1, t2 = a_turn(first, "turn-1", "shop.selling"), a_turn(first, "turn-2", "shop.selling")
    t3 = a_turn(second, "turn-1", "shop.selling")
    calls(t1, 100, 200, 300, tokens=(1000, 10, 500, 0))
    calls(t2, 400, 500, 600, 700, tokens=(2000, 20, 0, 300))
    calls(t3, 800, 900, 1000, None, tokens=(3000, 30, 0, 0))
    a_turn(first, "turn-3", "shop.resting", "idler")  # a Turn with no model call (a person played it)
    child = a_turn(first, "study/turn-4", "research.looking", "study/scout")
    calls(child, 50, 150, tokens=(7000, 700, 0, 0))
    an_effect(first, "effect-1", "shop.stock", 1000)
    an_effect(second, "effect-1", "shop.stock", 3000)
    an_effect(second, "effect-2", "shop.stock", None)
    an_effect(first, "study/effect-2", "research.looking", 40)
    gone = a_turn(second, "turn-2", "shop.gone")  # a state the Machine does not have now
    calls(gone, 5, tokens=(1, 1, 0, 0))
    calls(a_turn(other, "turn-1", "notes.writing", "writer"), 9999, tokens=(99999, 9999, 0, 0))
    return {"first": first, "second": second, "other": other}


def by_path(costs: list[StateCost]) -> dict[str, StateCost]:
    return {c.path: c for c in costs}


# -- the numbers -------------------------------------------------------------------------------------------------


def test_percentiles_interpolate_between_the_closest_ranks() -> None:
    assert percentile([400, 100, 300, 200], 50) == 250
    assert percentile([100, 200, 300, 400, 500, 600, 700, 800, 900, 1000], 95) == pytest.approx(955)
    assert percentile([100, 200, 300, 400, 500, 600, 700, 800, 900, 1000], 50) == pytest.approx(550)
    assert percentile([7.5], 50) == percentile([7.5], 95) == 7.5
    assert percentile([], 50) is None
    assert percentile([1, 2, 3], 0) == 1 and percentile([1, 2, 3], 100) == 3


def test_each_state_sums_and_counts_its_own_rows_over_the_workflows_runs(shop_runs: dict[str, Run]) -> None:
    costs = state_costs(Run.objects.filter(workflow="shop"), shop())
    assert [c.path for c in costs] == ["selling", "selling.checking", "studying", "resting", "gone"]
    found = by_path(costs)

    selling = found["selling"]
    assert (selling.turns, selling.calls) == (3, 11)
    assert (selling.input_tokens, selling.output_tokens, selling.cache_read_tokens, selling.cache_write_tokens) == (
        3 * 1000 + 4 * 2000 + 4 * 3000,
        3 * 10 + 4 * 20 + 4 * 30,
        3 * 500,
        4 * 300,
    )
    assert selling.latency_ms == pytest.approx(5500)  # the call in flight has no latency: counted, not timed
    assert selling.latency_p50_ms == pytest.approx(550) and selling.latency_p95_ms == pytest.approx(955)
    assert (selling.effects, selling.effect_p50_ms) == (0, None)

    checking = found["selling.checking"]  # written under its own id, "shop.stock", not as a state "stock"
    assert (checking.turns, checking.calls, checking.effects) == (0, 0, 3)
    assert checking.effect_ms == pytest.approx(4000)
    assert checking.effect_p50_ms == pytest.approx(2000) and checking.effect_p95_ms == pytest.approx(2900)
    assert checking.latency_p50_ms is None and checking.tokens == 0

    studying = found["studying"]  # the child Machine's Turn and Effect count where the graph draws the child
    assert (studying.turns, studying.calls, studying.input_tokens, studying.output_tokens) == (1, 2, 14000, 1400)
    assert studying.latency_p50_ms == pytest.approx(100) and studying.latency_p95_ms == pytest.approx(145)
    assert (studying.effects, studying.effect_p50_ms, studying.effect_p95_ms) == (1, 40, 40)

    resting = found["resting"]
    assert (resting.turns, resting.calls, resting.tokens, resting.latency_p50_ms) == (1, 0, 0, None)
    assert found["gone"].on_graph is False and all(c.on_graph for c in costs if c.path != "gone")
    assert "writing" not in found  # the run of notes is not one of shop's


def test_one_run_counts_only_its_own_rows(shop_runs: dict[str, Run]) -> None:
    found = by_path(state_costs(shop_runs["second"], shop()))
    assert (found["selling"].turns, found["selling"].calls, found["selling"].input_tokens) == (1, 4, 12000)
    assert found["selling"].latency_p50_ms == pytest.approx(900) and found["selling"].latency_p95_ms == pytest.approx(
        990
    )
    assert (found["selling.checking"].effects, found["selling.checking"].effect_p50_ms) == (2, 3000)
    assert (found["studying"].turns, found["studying"].effects, found["studying"].spent) == (0, 0, False)


def test_one_run_summed_in_python_is_the_database_grouping_of_that_run(shop_runs: dict[str, Run]) -> None:
    """A single run's costs are summed from its rows here (the live page draws them after every commit); a queryset
    of that one run goes through the database's grouping: the two agree on every number, with the Machine and
    without it, by either measure."""
    for run in shop_runs.values():
        for machine in (shop(), None):
            for measure in ("tokens", "time"):
                one = state_costs(run, machine, measure)
                assert one == state_costs(Run.objects.filter(id=run.id), machine, measure), (run.id, measure)
    assert any(c.spent for c in state_costs(shop_runs["first"], shop()))


def test_the_heat_by_tokens_and_by_time(shop_runs: dict[str, Run]) -> None:
    runs = Run.objects.filter(workflow="shop")
    tokens = by_path(state_costs(runs, shop(), "tokens"))
    assert tokens["selling"].tokens == 23230 and tokens["selling"].heat == 1.0
    assert tokens["studying"].heat == pytest.approx(15400 / 23230)
    assert tokens["selling.checking"].heat == 0.0 and tokens["resting"].heat == 0.0
    time = by_path(state_costs(runs, shop(), "time"))
    assert time["selling"].time_ms == pytest.approx(5500) and time["selling"].heat == 1.0
    assert time["selling.checking"].heat == pytest.approx(4000 / 5500)
    assert time["studying"].heat == pytest.approx((200 + 40) / 5500)
    assert heat_level(time["selling.checking"].heat) == 3 and heat_level(time["studying"].heat) == 0


def test_heat_steps_are_fifths_with_the_top_one_closed() -> None:
    assert [heat_level(h) for h in (0, 0.19, 0.2, 0.39, 0.4, 0.6, 0.79, 0.8, 0.99, 1.0, 1.5, -1)] == [
        0,
        0,
        1,
        1,
        2,
        3,
        3,
        4,
        4,
        4,
        4,
        0,
    ]


def test_a_run_with_no_records_is_all_zeros(transactional_db: Any) -> None:
    costs = state_costs(a_run(), shop(), "time")
    assert [c.path for c in costs] == ["selling", "selling.checking", "studying", "resting"]
    for c in costs:
        assert (c.turns, c.calls, c.tokens, c.effects, c.time_ms, c.heat, c.spent) == (0, 0, 0, 0, 0, 0.0, False)
        assert c.latency_p50_ms is c.latency_p95_ms is c.effect_p50_ms is c.effect_p95_ms is None
    assert heat_of(costs) == {} and titles_of(costs) == {}


def test_without_the_machine_the_machine_id_is_cut_off(shop_runs: dict[str, Run]) -> None:
    """A workflow that does not load now: paths are read by cutting the Machine's id off; a state's own id and a
    child's records stay as written."""
    found = by_path(state_costs(shop_runs["first"], None))
    assert set(found) == {"selling", "resting", "stock", "study/research.looking"}
    assert (found["selling"].turns, found["selling"].calls) == (2, 7)
    assert (found["stock"].effects, found["study/research.looking"].calls) == (1, 2)
    assert found["study/research.looking"].effects == 1
    assert not any(c.on_graph for c in found.values())


# -- the overlay on the graph ------------------------------------------------------------------------------------


def heat_classes(g: ET.Element) -> list[str]:
    return [c for c in (g.get("class") or "").split() if c.startswith("heat-")]


def tooltip(g: ET.Element) -> str:
    title = g.find(SVG + "title")
    assert title is not None
    return title.text or ""


def test_overlay_marks_exactly_the_given_states_with_their_step_and_numbers() -> None:
    svg = machine_svg(notes.machine)
    hot = overlay_svg(
        svg,
        {"writing": 1.0, "writing.asking": 0.25, "nowhere": 0.5},
        {"writing": "3 Turns\ntokens in 1,200", "writing.asking": "1 Effect"},
    )
    found = state_groups(hot)
    assert {path: heat_classes(g) for path, g in found.items() if heat_classes(g)} == {
        "writing": ["heat-4"],
        "writing.asking": ["heat-1"],
    }
    assert tooltip(found["writing"]) == "writing\n3 Turns\ntokens in 1,200"
    assert tooltip(found["writing.asking"]) == "writing.asking\n1 Effect"
    assert tooltip(found["published"]) == "published"
    assert overlay_svg(svg, {}, {}) is svg
    assert re.sub(r" heat-\d", "", hot).replace("\n3 Turns\ntokens in 1,200", "").replace("\n1 Effect", "") == svg


def test_overlay_escapes_the_tooltip() -> None:
    nasty = '<script>alert("x")</script> & </title>'
    hot = overlay_svg(machine_svg(notes.machine), {"writing": 0.5}, {"writing": nasty})
    assert "<script>" not in hot and "</title> &" not in hot
    assert tooltip(state_groups(hot)["writing"]) == "writing\n" + nasty


def test_overlay_and_lit_compose_either_way_round() -> None:
    svg = machine_svg(notes.machine)
    heat, titles = {"writing": 0.9, "writing.drafting": 0.1}, {"writing": "2 Turns"}
    one = lit_svg(overlay_svg(svg, heat, titles), ["writing", "writing.drafting"], ["writing"])
    two = overlay_svg(lit_svg(svg, ["writing", "writing.drafting"], ["writing"]), heat, titles)
    for drawn in (one, two):
        found = state_groups(drawn)
        assert {"active", "visited", "heat-4"} <= set(found["writing"].get("class", "").split())
        assert {"active", "heat-0"} <= set(found["writing.drafting"].get("class", "").split())
        assert tooltip(found["writing"]) == "writing\n2 Turns"
    assert one.replace(" heat-4", "").replace(" heat-0", "") == two.replace(" heat-4", "").replace(" heat-0", "")


def test_overlay_of_the_shop_marks_the_states_that_spent(shop_runs: dict[str, Run]) -> None:
    machine = shop()
    costs = state_costs(Run.objects.filter(workflow="shop"), machine, "time")
    found = state_groups(overlay_svg(machine_svg(machine), heat_of(costs), titles_of(costs)))
    assert {p: heat_classes(g) for p, g in found.items() if heat_classes(g)} == {
        "selling": ["heat-4"],
        "selling.checking": ["heat-3"],
        "studying": ["heat-0"],
        "resting": ["heat-0"],
    }
    text = tooltip(found["selling"])
    assert text.startswith("selling\n3 Turns, 11 model calls\n")
    assert "tokens in 23,000, out 230; cache read 1,500, write 1,200" in text
    assert "model latency p50 550 ms, p95 955 ms" in text and "heat 100%" in text
    assert "3 Effects, duration p50 2 s, p95 2.9 s" in tooltip(found["selling.checking"])


# -- the table ---------------------------------------------------------------------------------------------------


def test_the_table_sorts_by_any_column_either_way_with_the_empty_ones_last(shop_runs: dict[str, Run]) -> None:
    costs = state_costs(Run.objects.filter(workflow="shop"), shop())
    order = lambda sort: [c.path for c in sort_costs(costs, sort)[0]]
    assert order("-input") == ["selling", "studying", "gone", "selling.checking", "resting"]
    assert order("input") == ["selling.checking", "resting", "gone", "studying", "selling"]
    assert order("-latency_p95") == ["selling", "studying", "gone", "selling.checking", "resting"]
    assert order("latency_p95") == ["gone", "studying", "selling", "selling.checking", "resting"]
    assert order("-effects") == ["selling.checking", "studying", "selling", "resting", "gone"]
    assert order("state") == ["selling", "selling.checking", "studying", "resting", "gone"]
    assert order("-state") == ["gone", "resting", "studying", "selling.checking", "selling"]
    assert order("nonsense") == order("-heat") == ["selling", "studying", "gone", "selling.checking", "resting"]
    table = cost_table(costs, "-turns", lambda sort: f"?sort={sort}")
    headers = {c.key: c for c in table.columns}
    assert (headers["turns"].sorted, headers["turns"].query) == ("desc", "?sort=turns")
    assert (headers["input"].sorted, headers["input"].query) == ("", "?sort=-input")
    assert headers["state"].query == "?sort=state"
    assert cost_table(costs, "turns", lambda sort: f"?sort={sort}").columns[1].query == "?sort=-turns"
    first = table.rows[0]
    assert first.cost.path == "selling" and first.cells[:3] == ["3", "11", "23,000"]


def test_latencies_read_as_people_read_them() -> None:
    assert [fmt_ms(v) for v in (None, 0.123, 9.96, 125.4, 1332.4, 59_999, 150_000)] == [
        "—",
        "0.123 ms",
        "9.96 ms",
        "125 ms",
        "1.33 s",
        "1 min",
        "2.5 min",
    ]


# -- the pages ---------------------------------------------------------------------------------------------------


def code_review_runs() -> list[Run]:
    """Two runs of code_review with chosen numbers: the reviewer spends the most tokens, the tests the most time."""
    first, second = a_run("code_review"), a_run("code_review")
    calls(a_turn(first, "turn-1", "code_review.coding", "coder"), 300, tokens=(400, 40, 0, 0))
    calls(a_turn(first, "turn-2", "code_review.reviewing", "reviewer"), 200, 400, tokens=(900, 90, 800, 0))
    calls(a_turn(second, "turn-1", "code_review.reviewing", "reviewer"), 600, tokens=(900, 90, 800, 0))
    an_effect(first, "effect-1", "code_review.reviewing.testing", 5000)
    an_effect(second, "effect-1", "code_review.reviewing.testing", 7000)
    return [first, second]


def section(page: str) -> str:
    start = page.index('<section class="card costs" id="costs">')
    return page[start : page.index("</section>", start)]


def row_order(page: str) -> list[str]:
    return re.findall(r'<tr data-state="([^"]*)"', section(page))


def graph_of(page: str) -> dict[str, ET.Element]:
    return state_groups(page[page.index("<svg") : page.index("</svg>") + 6])


def test_the_workflow_page_has_the_section_over_all_its_runs_and_no_overlay_by_default(transactional_db: Any) -> None:
    code_review_runs()
    page = logged_in("olga").get("/workflows/code_review/").content.decode()
    part = section(page)
    assert "<h2>Cost and time per state</h2>" in part and "Over 2 runs of code_review" in part
    # by tokens, the most first; states that spent nothing (the checkout Effect here) in the graph's order
    assert row_order(page) == ["reviewing", "coding", "checkout", "reviewing.testing", "fixing"]
    reviewing = re.search(r'<tr data-state="reviewing">(.*?)</tr>', part, re.S)
    assert reviewing is not None
    cells = re.findall(r'<td class="num[^"]*">(.*?)</td>', reviewing.group(1), re.S)
    assert [re.sub(r"<[^>]+>", "", c).strip() for c in cells] == [
        "2",
        "3",
        "2,700",
        "270",
        "2,400",
        "0",
        "400 ms",
        "580 ms",
        "0",
        "—",
        "—",
        "1.2 s",
        "100%",
    ]
    assert not any(heat_classes(g) for g in graph_of(page).values())
    assert 'href="/workflows/code_review/?overlay=tokens"' in page
    assert 'href="/workflows/code_review/?overlay=time"' in page


def test_the_workflow_page_overlay_by_time_heats_the_graph_and_keeps_its_choice_in_the_links(
    transactional_db: Any,
) -> None:
    code_review_runs()
    page = logged_in("olga").get("/workflows/code_review/?overlay=time").content.decode()
    found = graph_of(page)
    assert {p: heat_classes(g) for p, g in found.items() if heat_classes(g)} == {
        "reviewing.testing": ["heat-4"],
        "reviewing": ["heat-0"],
        "coding": ["heat-0"],
    }
    assert tooltip(found["reviewing.testing"]).startswith("reviewing.testing\n0 Turns, 0 model calls\n")
    assert "2 Effects, duration p50 6 s, p95 6.9 s" in tooltip(found["reviewing.testing"])
    assert "model latency p50 400 ms, p95 580 ms" in tooltip(found["reviewing"])
    assert row_order(page)[0] == "reviewing.testing"
    assert 'href="/workflows/code_review/?overlay=time&amp;sort=-turns#costs"' in page
    assert re.search(r'<a href="/workflows/code_review/\?overlay=time" class="on"', page)
    assert 'href="/workflows/code_review/"' in page  # off
    assert 'class="heat-legend"' in page


def test_a_header_sorts_the_table_and_again_the_other_way(transactional_db: Any) -> None:
    code_review_runs()
    client = logged_in("olga")
    page = client.get("/workflows/code_review/?sort=-effects").content.decode()
    assert row_order(page) == ["reviewing.testing", "checkout", "coding", "reviewing", "fixing"]
    assert re.search(
        r'<th class="num" aria-sort="descending"><a href="/workflows/code_review/\?sort=effects#costs"', page
    )
    page = client.get("/workflows/code_review/?sort=latency_p50").content.decode()
    assert row_order(page) == ["coding", "reviewing", "checkout", "reviewing.testing", "fixing"]  # 300, 400, none
    page = client.get("/workflows/code_review/?sort=-state").content.decode()
    assert row_order(page) == ["fixing", "reviewing.testing", "reviewing", "coding", "checkout"]
    page = client.get("/workflows/code_review/?sort=-turns&overlay=time").content.decode()
    assert row_order(page) == ["reviewing", "coding", "checkout", "reviewing.testing", "fixing"]
    assert 'href="/workflows/code_review/?overlay=time&amp;sort=turns#costs"' in page


def test_a_run_page_shows_that_runs_costs_under_its_lit_graph(transactional_db: Any) -> None:
    first, _ = code_review_runs()
    first.view = {"active": ["reviewing", "reviewing.testing"], "visited": ["coding", "reviewing"]}
    first.status = "running"
    first.save()
    page = logged_in("olga").get(f"/runs/{first.id}/?overlay=time").content.decode()
    assert "This run:" in section(page) and "Over " not in section(page)
    found = graph_of(page)
    assert set(found["reviewing.testing"].get("class", "").split()) >= {"active", "heat-4"}
    assert set(found["reviewing"].get("class", "").split()) >= {"active", "visited", "heat-0"}
    assert "1 Effect, duration p50 5 s, p95 5 s" in tooltip(found["reviewing.testing"])
    assert "1 Turn, 2 model calls" in tooltip(found["reviewing"])
    assert page.index('id="graph"') < page.index('id="cost-toggle"') < page.index('id="costs"')
    for region in ("run-lit", "run-status", "run-turns"):
        assert page.count(f'id="{region}"') == 1, region
    assert f'href="/runs/{first.id}/?overlay=time&amp;sort=-turns#costs"' in page


def test_the_live_regions_do_not_carry_the_section(transactional_db: Any) -> None:
    first, _ = code_review_runs()
    regions = run_regions(first.id, user_in("olga"))
    assert regions and 'id="run-lit"' in regions and 'id="costs"' not in regions and "heat-" not in regions


def test_a_run_with_no_model_calls_shows_zeros(transactional_db: Any) -> None:
    run = a_run("notes", status="waiting", view={"active": ["writing", "writing.drafting"]})
    a_turn(run, "turn-1", "notes.writing", "writer")  # a Turn, but no call was made yet
    client = logged_in("olga")
    for query in ("", "?overlay=tokens", "?overlay=time&sort=-effect_p95"):
        url = f"/runs/{run.id}/{query}"
        response = client.get(url)
        assert response.status_code == 200, url
        page = response.content.decode()
        row = re.search(r'<tr data-state="writing">(.*?)</tr>', section(page), re.S)
        assert row is not None
        cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row.group(1), re.S)]
        assert cells == ["1", "0", "0", "0", "0", "0", "—", "—", "0", "—", "—", "0 ms", "0%"], url
        assert 'id="costs-unmeasured"' in page and 'id="costs-none"' not in page
    assert [heat_classes(g) for g in graph_of(page).values() if heat_classes(g)] == [["heat-0"]]
    empty = a_run("notes", status="waiting")
    page = client.get(f"/runs/{empty.id}/?overlay=time").content.decode()
    assert 'id="costs-none"' in page and 'id="costs-unmeasured"' not in page and row_order(page) == ["writing"]
    assert not any(heat_classes(g) for g in graph_of(page).values())


# -- real runs -----------------------------------------------------------------------------------------------------


def test_a_code_review_run_by_a_real_host_shows_its_recorded_rows(runs_with_code_review: dict[str, str]) -> None:
    run = Run.objects.get(id=runs_with_code_review["code_review"])
    found = by_path(state_costs(run, code_review.machine))
    for path in ("coding", "reviewing", "fixing"):
        turns = TurnRecord.objects.filter(run=run, state=f"code_review.{path}")
        made = ModelCall.objects.filter(run=run, turn__in=turns)
        assert turns.exists() and found[path].turns == turns.count()
        assert found[path].calls == made.count() > 0
        assert found[path].latency_ms == pytest.approx(sum(c.latency_ms for c in made))
    durations = sorted(
        EffectRecord.objects.filter(run=run, state="code_review.reviewing.testing").values_list(
            "duration_ms", flat=True
        )
    )
    assert len(durations) == 2 and all(d > 0 for d in durations)
    testing = found["reviewing.testing"]
    assert testing.effects == 2 and testing.effect_ms == pytest.approx(sum(durations))
    assert testing.effect_p50_ms == pytest.approx((durations[0] + durations[1]) / 2)
    assert testing.effect_p95_ms == pytest.approx(durations[0] + 0.95 * (durations[1] - durations[0]))

    client = logged_in("olga")
    page = client.get(f"/runs/{run.id}/?overlay=time").content.decode()
    assert f"2 Effects, duration p50 {fmt_ms(testing.effect_p50_ms)}" in tooltip(graph_of(page)["reviewing.testing"])
    assert heat_classes(graph_of(page)["reviewing.testing"]) == ["heat-4"]  # the tests take the time here
    page = client.get("/workflows/code_review/").content.decode()
    assert "Over 1 run of code_review" in section(page)
    page = client.get("/workflows/notes/").content.decode()
    assert "Over 4 runs of notes" in section(page)
    writing = by_path(state_costs(Run.objects.filter(workflow="notes"), notes.machine))["writing"]
    assert writing.turns == TurnRecord.objects.filter(run__workflow="notes").count() == 4


@pytest.fixture
def server(settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModelServer]:
    """The fake model server behind the Anthropic provider (as tests/runtime/test_turn_loop.py sets it up)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-real-key")
    settings.JR2_SCRIPTED = False
    settings.JR2_PROVIDER_MAX_RETRIES = 1
    settings.JR2_PROVIDER_TIMEOUT = 20.0
    with ModelServer() as fake:
        settings.JR2_ANTHROPIC_BASE_URL = fake.url
        reset_providers()
        try:
            yield fake
        finally:
            reset_providers()


def test_the_tokens_a_model_reported_are_the_tokens_of_its_state(server: ModelServer) -> None:
    server.queue(
        tool_call(
            "ask", {"question": "Who reads these notes?"}, usage={"input": 1200, "output": 40, "cache_write": 1100}
        ),
        tool_call(
            "done",
            {"notes": "## What's new\n- Faster start-up."},
            usage={"input": 90, "output": 60, "cache_read": 1100},
        ),
    )
    made: dict[str, str] = {}

    async def body(host: Host) -> None:
        made["run"] = await host.start_run("notes", NOTES_DOOR)
        await until(host, status(made["run"], "waiting"))
        await host.deliver(made["run"], "gate", gate="writing.asking", event="reply", params={"text": "Admins."})
        await until(host, status(made["run"], "done", "failed"))

    hosted({"notes": notes.machine}, body, owner="costs-test")

    run = Run.objects.get(id=made["run"])
    assert run.status == "done", run.reason
    writing = by_path(state_costs(run, notes.machine))["writing"]
    assert (writing.input_tokens, writing.output_tokens, writing.cache_read_tokens, writing.cache_write_tokens) == (
        1290,
        100,
        1100,
        1100,
    )
    [turn] = TurnRecord.objects.filter(run=run)
    assert (turn.input_tokens, turn.output_tokens, turn.cache_read_tokens, turn.cache_write_tokens) == (
        writing.input_tokens,
        writing.output_tokens,
        writing.cache_read_tokens,
        writing.cache_write_tokens,
    )
    latencies = sorted(ModelCall.objects.filter(run=run).values_list("latency_ms", flat=True))
    assert writing.calls == len(latencies) == 2
    assert writing.latency_p50_ms == pytest.approx(sum(latencies) / 2)
    assert writing.heat == 1.0
    page = logged_in("olga").get(f"/runs/{run.id}/?overlay=tokens").content.decode()
    text = tooltip(graph_of(page)["writing"])
    assert "1 Turn, 2 model calls\ntokens in 1,290, out 100; cache read 1,100, write 1,100" in text
