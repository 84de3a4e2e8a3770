"""The row kernels (reasoning/native/kernels.py): the C extension that setup.py builds at
install time is the one in use, HYPO_KERNELS picks numpy instead, and a missing extension is
a reason and the numpy stand-in, not an error (nothing is compiled at import or run time)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from reasoning.native import kernels

ROOT = Path(__file__).resolve().parent.parent


def _cc_available() -> bool:
    import shutil

    return shutil.which("cc") is not None or shutil.which("gcc") is not None


@pytest.mark.skipif(not _cc_available(), reason="no C compiler here: the numpy kernels stand in")
def test_the_installed_extension_is_in_use():
    assert kernels.IMPL == "c" and kernels.COMPILED, kernels.last_error
    mod = kernels.implementation("c")
    L = np.array([[1], [2], [2]], np.int64)
    li, ri = mod.join_rows(L, None, L, None, 2, False)
    assert sorted(zip(li.tolist(), ri.tolist())) == [(0, 0), (1, 1), (1, 2), (2, 1), (2, 2)]


def test_a_missing_extension_is_a_reason_not_an_error(monkeypatch):
    import reasoning.native

    monkeypatch.setitem(sys.modules, "reasoning.native._ckernels", None)  # import fails
    monkeypatch.delattr(reasoning.native, "_ckernels", raising=False)
    monkeypatch.setattr(kernels, "last_error", None)
    assert kernels.implementation("c") is None
    assert "not built at install time" in kernels.last_error
    assert "numpy kernels stand in" in kernels.last_error


def test_nothing_is_compiled_at_run_time():
    """No module of reasoning/ looks for a C compiler (the build belongs to setup.py)."""
    import re

    for p in (ROOT / "reasoning").rglob("*.py"):
        text = p.read_text(encoding="utf-8")
        assert not re.search(r"""which\(\s*["'](cc|gcc|clang)["']|build_ext|sysconfig\.get_paths""",
                             text), p


@pytest.mark.parametrize("want", ["numpy", "c"])
def test_hypo_kernels_picks_the_implementation(want):
    env = dict(os.environ, HYPO_KERNELS=want)
    r = subprocess.run([sys.executable, "-c", "from reasoning.native import kernels; "
                        "print(kernels.IMPL, kernels.COMPILED)"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    impl, compiled = r.stdout.split()
    # the one asked for, or numpy where the extension was not built here
    assert impl in (want, "numpy") and (compiled == "True") == (impl != "numpy")
