"""The Console's first page lists each Workflow with what the engine derives for it, escaped."""

import pytest

pytestmark = pytest.mark.django_db


@pytest.fixture
def workflows_dir(tmp_path, settings):
    settings.JR2_WORKFLOWS = str(tmp_path)
    return tmp_path


@pytest.fixture
def client(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("reader"))
    return client


def test_home_shows_the_seats_menus_of_the_shipped_workflows(client):
    page = client.get("/").content.decode()
    assert "notes.writing" in page and "agent:writer" in page and "ask, done" in page
    assert "notes.writing.asking" in page and "reply" in page
    assert "code_review" in page and "triage" in page


def test_home_reports_a_refused_workflow_and_escapes_its_message(client, workflows_dir):
    (workflows_dir / "bad.py").write_text(
        "from engine import jr2_setup\n"
        "machine = jr2_setup(events=[]).create_machine({'id': '<b>x</b>', 'initial': 'a', "
        "'states': {'a': {'on': {'<script>': 'a'}}}})\n"
    )
    page = client.get("/").content.decode()
    assert "bad.py" in page
    assert "<script>" not in page and "&lt;script&gt;" in page
