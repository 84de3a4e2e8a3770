"""bench/ab.py (the A/B harness): its refusals, without running a benchmark."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_an_unknown_revision_is_a_message_and_no_worktree():
    before = subprocess.run(["git", "worktree", "list"], cwd=ROOT, capture_output=True,
                            text=True).stdout
    p = subprocess.run([sys.executable, "bench/ab.py", "--base", "no-such-revision"],
                       cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 2
    assert "'no-such-revision' is not a revision of this repository" in p.stderr
    assert "Traceback" not in p.stderr
    after = subprocess.run(["git", "worktree", "list"], cwd=ROOT, capture_output=True,
                           text=True).stdout
    assert after == before
