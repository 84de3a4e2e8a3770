"""Shared fixtures: `engine` runs a test once per executor of Algorithm 1 (the row engine,
the reference, and the set-at-a-time one)."""
from __future__ import annotations

import pytest

from tests import helpers


@pytest.fixture(params=helpers.ENGINES)
def engine(request, monkeypatch):
    monkeypatch.setattr(helpers, "ENGINE", request.param)
    return request.param
