"""Packaging (issue 41.4): the wheel built from a clean copy of the tracked files, installed
without -e into a fresh venv, is a working `hypo` — every subpackage and data file inside,
the C kernels compiled by the build backend (never at run time) — and answers Example 13
as the golden files say."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


def _clean_env() -> dict:
    """This process's environment without what would make a subprocess see the checkout:
    a test before this one may have put the repository on PYTHONPATH (the Spark session
    does, for its workers), and pip would then take the checkout's hypo.egg-info for an
    installed hypo and skip the wheel."""
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "PYTHONHOME", "HYPO_KERNELS", "PIP_TARGET", "PIP_PREFIX",
                         "PIP_USER")}


def _run(cmd, **kw):
    kw.setdefault("env", _clean_env())
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, **kw)
    assert r.returncode == 0, f"{cmd}: exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv, wheel, work dir with the examples) — the clean copy holds the files git
    tracks as they are in the working tree, without any build output."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    files = _run(["git", "ls-files", "-z"], cwd=ROOT).stdout.split("\0")
    for f in filter(None, files):
        p = ROOT / f
        if p.is_file():
            (src / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, src / f)
    dist = tmp / "dist"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(src)])
    wheel = next(dist.glob("hypo-*.whl"))
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
          "--disable-pip-version-check", str(wheel)], cwd=str(tmp))
    work = tmp / "work"
    shutil.copytree(ROOT / "examples", work / "examples")
    return venv, wheel, work


def test_the_wheel_holds_every_package_and_the_compiled_kernels(installed):
    _, wheel, _ = installed
    names = zipfile.ZipFile(wheel).namelist()
    pkgs = {str(p.parent.relative_to(ROOT)) for pkg in ("reasoning", "jobs", "schemas", "hypo_cli")
            for p in (ROOT / pkg).rglob("__init__.py")}
    for pkg in pkgs:
        assert f"{pkg}/__init__.py" in names, pkg
    for data in ("reasoning/language/grammar.lark", "reasoning/language/grammar_tables.json",
                 "schemas/lake.json"):
        assert data in names, data
    assert any(n.startswith("reasoning/native/_ckernels.") and n.endswith(".so") for n in names)


def test_the_installed_hypo_answers_as_the_golden_files(installed):
    venv, _, work = installed
    env = _clean_env()
    hypo = str(venv / "bin" / "hypo")
    py = str(venv / "bin" / "python")
    where = _run([py, "-c", "import reasoning, reasoning.native.kernels as k; "
                  "print(reasoning.__file__); print(k.IMPL)"], cwd=work, env=env).stdout.split()
    assert where[0].startswith(str(venv)) and where[1] == "c"
    got = _run([hypo, "check", "examples/wind_turbines.tdl"], cwd=work, env=env)
    assert got.stdout + got.stderr == \
        (ROOT / "tests" / "golden" / "check" / "wind_turbines.text").read_text(encoding="utf-8")
    got = _run([hypo, "run", "examples/wind_turbines.tdl", "--stream",
                "examples/wind_turbines.jsonl", "--format", "jsonl"], cwd=work, env=env)
    assert got.stdout == (ROOT / "tests" / "golden" / "ex13_run.jsonl").read_text()
    for engine in ("row", "columnar"):
        again = _run([hypo, "run", "examples/wind_turbines.tdl", "--stream",
                      "examples/wind_turbines.jsonl", "--format", "jsonl", "--engine", engine],
                     cwd=work, env=env)
        assert again.stdout == got.stdout, engine
