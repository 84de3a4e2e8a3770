"""Nothing is downloaded after set-up (issue 43): in a network namespace of its own (no
route out, loopback only: `unshare -n`), a Spark session starts with the delta-spark jars of
the venv, two ticks of Example 13 run on Spark and delta-spark commits them, and Spark SQL
reads their history.  Skipped where this process may not make a network namespace."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.spark, pytest.mark.slow]

DRIVER = r'''
import __main__, os, sys
__main__.__file__ = "offline-driver"  # great_expectations' import looks at it (README)
os.environ["HYPO_SPARK_WRITER"] = "delta-spark"
sys.path.insert(0, sys.argv[1])
from jobs import lake as api
from jobs.tick.spark import session
lake = sys.argv[2]
api.init(lake, os.path.join(sys.argv[1], "examples", "wind_turbines.tdl"))
api.ingest(lake, None, [os.path.join(sys.argv[1], "examples", "wind_turbines.jsonl")])
spark = session("local[1]")
for t in (0, 1):
    api.run_tick(lake, t, executor="spark", master="local[1]")
h = spark.sql(f"DESCRIBE HISTORY delta.`{lake}/answers`").where(
    "get_json_object(userMetadata, '$.tick') IS NOT NULL").count()
print("commits of ticks:", h)
spark.stop()
'''


def _namespace_ok() -> bool:
    if not shutil.which("unshare") or not shutil.which("ip"):
        return False
    r = subprocess.run(["unshare", "-n", "ip", "link", "set", "lo", "up"],
                       capture_output=True, timeout=30)
    return r.returncode == 0


@pytest.mark.skipif(not _namespace_ok(), reason="no network namespace (unshare -n) here")
def test_a_spark_tick_with_delta_spark_needs_no_network(tmp_path):
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    cmd = (f"ip link set lo up && exec {sys.executable} {script} {ROOT} {tmp_path / 'lake'}")
    r = subprocess.run(["unshare", "-n", "bash", "-c", cmd], capture_output=True, text=True,
                       timeout=900, cwd=str(ROOT))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "commits of ticks: 2" in r.stdout, r.stdout + r.stderr[-2000:]
