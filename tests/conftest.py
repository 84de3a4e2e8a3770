"""Shared fixtures: `engine` runs a test once per executor of Algorithm 1 (the row engine,
the reference, and the set-at-a-time one)."""
from __future__ import annotations

import os

import pytest
from hypothesis import settings

from tests import helpers

# CI (.ci/run sets HYPO_CI=1): the same examples on every run, so its duration is predictable
# and a failure reproduces; locally the examples are random (and HYPO_THOROUGH=1 doubles them).
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("HYPO_CI") == "1":
    settings.load_profile("ci")


@pytest.fixture(params=helpers.ENGINES)
def engine(request, monkeypatch):
    monkeypatch.setattr(helpers, "ENGINE", request.param)
    return request.param
