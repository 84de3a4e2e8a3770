"""scripts/land_stream.py: a JSON-lines stream → per-tick landing dirs with _READY markers,
empty ticks declared, idempotent; and scripts/demo.sh's argument handling."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("land_stream", ROOT / "scripts" / "land_stream.py")
land_stream = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(land_stream)


def tree(lake: Path) -> dict:
    return {str(p.relative_to(lake)): p.read_text() for p in sorted(lake.rglob("*"))
            if p.is_file()}


def test_lands_every_tick_with_ready_markers(tmp_path):
    r = land_stream.land(str(ROOT / "examples" / "wind_turbines.jsonl"), str(tmp_path), until=5)
    assert (r["ticks"], r["landed"], r["empty"], r["unchanged"]) == (6, 3, 3, 0)
    t = tree(tmp_path)
    assert sorted(t) == [f"landing/tick={i}/{f}" for i in range(6) for f in
                         (["_READY", "wind_turbines.jsonl"] if i in (0, 2, 3) else ["_READY"])]
    assert t["landing/tick=2/wind_turbines.jsonl"] == (
        '{"tick": 2, "fact": "Hot(wt1, 2)"}\n{"tick": 2, "fact": "Hot(wt2, 0)"}\n')
    assert all(v == "" for k, v in t.items() if k.endswith("_READY"))
    again = land_stream.land(str(ROOT / "examples" / "wind_turbines.jsonl"), str(tmp_path), 5)
    assert (again["landed"], again["empty"], again["unchanged"]) == (0, 0, 6)
    assert tree(tmp_path) == t
    assert not list(tmp_path.rglob(".*.tmp"))


def test_refuses_other_content_and_bad_rows(tmp_path):
    s = tmp_path / "s.jsonl"
    s.write_text('{"tick": 0, "fact": "Hot(wt1, 0)"}\n\n{"tick": 1, "fact": "Hot(wt1, 1)"}\n')
    assert land_stream.land(str(s), str(tmp_path / "lake"))["ticks"] == 2  # until: last tick
    s.write_text('{"tick": 0, "fact": "Hot(wt2, 0)"}\n')
    with pytest.raises(SystemExit, match="already landed with other content"):
        land_stream.land(str(s), str(tmp_path / "lake"))
    s.write_text('{"fact": "Hot(wt2, 0)"}\n{"tick": -1}\nnot json\n')
    with pytest.raises(SystemExit, match=r"s\.jsonl:1: .*\n.*s\.jsonl:2: .*\n.*s\.jsonl:3"):
        land_stream.land(str(s), str(tmp_path / "other"))
    s.write_text('{"tick": 4, "fact": "Hot(wt2, 4)"}\n')
    with pytest.raises(SystemExit, match="--until 2 is before the stream's last tick 4"):
        land_stream.land(str(s), str(tmp_path / "other"), until=2)


def test_cli(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "land_stream.py"),
                        str(ROOT / "examples" / "wind_turbines.jsonl"), "--lake",
                        str(tmp_path), "--until", "8"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "ticks 0..8 (3 with data, 6 declared empty, 0 already there)" in r.stdout


def test_demo_script_arguments():
    demo = ROOT / "scripts" / "demo.sh"
    assert subprocess.run(["bash", "-n", str(demo)]).returncode == 0
    r = subprocess.run(["bash", str(demo), "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "README command 1" in r.stdout
    r = subprocess.run(["bash", str(demo), "--bogus"], capture_output=True, text=True)
    assert r.returncode == 2 and "unknown argument --bogus" in r.stderr
