"""Building and choosing the row kernels (reasoning/native/cbuild.py, kernels.py): the C
build from scratch, its failure modes (no compiler, a broken one) and HYPO_KERNELS."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from reasoning.native import cbuild

ROOT = Path(__file__).resolve().parent.parent


def _cc_available() -> bool:
    import shutil

    return shutil.which("cc") is not None or shutil.which("gcc") is not None


@pytest.mark.skipif(not _cc_available(), reason="no C compiler here")
def test_a_fresh_build_loads_and_joins(tmp_path, monkeypatch):
    monkeypatch.setattr(cbuild, "_dirs", lambda: [tmp_path])
    stale = tmp_path / "_ckernels_000000000000.so"
    stale.write_bytes(b"an older build")
    path = cbuild.build()
    assert path is not None and path.parent == tmp_path, cbuild.last_error
    assert not stale.exists()  # builds of other sources are removed
    assert not list(tmp_path.glob(".build-*"))  # no temporary file left
    mod = cbuild.load(build_missing=False)
    L = np.array([[1], [2], [2]], np.int64)
    li, ri = mod.join_rows(L, None, L, None, 2, False)
    assert sorted(zip(li.tolist(), ri.tolist())) == [(0, 0), (1, 1), (1, 2), (2, 1), (2, 2)]


def test_no_compiler_is_a_reason_not_an_error(tmp_path, monkeypatch):
    monkeypatch.setattr(cbuild, "_dirs", lambda: [tmp_path])
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    assert cbuild.build() is None
    assert "no-such-cc" in cbuild.last_error
    assert cbuild.load() is None  # kernels.py then takes numba's
    assert not list(tmp_path.iterdir())


def test_a_failing_compiler_reports_its_message(tmp_path, monkeypatch):
    cc = tmp_path / "cc"
    cc.write_text("#!/bin/sh\necho 'cc: out of licences' >&2\nexit 3\n")
    cc.chmod(0o755)
    out = tmp_path / "out"
    monkeypatch.setattr(cbuild, "_dirs", lambda: [out])
    monkeypatch.setenv("CC", str(cc))
    assert cbuild.build() is None
    assert "out of licences" in cbuild.last_error
    assert not list(out.iterdir())  # the temporary output is removed


@pytest.mark.parametrize("want", ["numpy", "numba", "c"])
def test_hypo_kernels_picks_the_implementation(want):
    env = dict(os.environ, HYPO_KERNELS=want)
    r = subprocess.run([sys.executable, "-c", "from reasoning.native import kernels; "
                        "print(kernels.IMPL, kernels.COMPILED)"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    impl, compiled = r.stdout.split()
    # the one asked for, or numpy where it is not available here
    assert impl in (want, "numpy") and (compiled == "True") == (impl != "numpy")
