"""Settings for every test: Agents' workspaces go to a temporary folder of the session, never beside the code
(servers the e2e tests start keep theirs beside their own database, in their own temporary folder)."""
from __future__ import annotations

import shutil
import tempfile

import pytest
from django.conf import settings

_ROOT = tempfile.mkdtemp(prefix="jr2-test-workspaces-")


def pytest_configure(config: pytest.Config) -> None:
    settings.JR2_WORKSPACE_ROOT = _ROOT


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_ROOT, ignore_errors=True)
