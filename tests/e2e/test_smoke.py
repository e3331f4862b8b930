"""The live server fixture itself: `jr2 up` answers, and a notes run goes through the API with a Gate answer."""

from tests.live_server import LiveServer


def test_a_notes_run_through_the_api(live: LiveServer) -> None:
    with live.client() as client:
        created = client.post("/api/workflows/notes/runs", json={"changes": "One fix."})
        assert created.status_code == 201, created.text
        run_id = created.json()["id"]
        run = live.wait_for(run_id, "waiting")
        [gate] = run["gates"]
        answered = client.post(f"/api/runs/{run_id}/gates/{gate['id']}/events", json={"type": "reply", "text": "Ops"})
        assert answered.status_code == 200, answered.text
    assert "Ops" in live.wait_for(run_id, "done")["output"]["notes"]
