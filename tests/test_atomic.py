"""reasoning/util/atomic.py: reports, program copies and lake metadata are written by a rename of
a temporary file — except to a path that is not a regular file (`--report /dev/stdout`, a
FIFO, a device), where a rename would replace the device node itself (as root, `--report
/dev/full` replaced /dev/full with a regular file)."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading

import pytest

from reasoning.util.atomic import write_text
from tests.helpers import EXAMPLES, ROOT


def test_a_regular_file_is_replaced_and_no_temporary_file_is_left(tmp_path):
    p = tmp_path / "r.html"
    p.write_text("old")
    write_text(str(p), "new")
    assert p.read_text() == "new" and os.listdir(tmp_path) == ["r.html"]


def test_a_symbolic_link_is_followed_not_replaced(tmp_path):
    target = tmp_path / "real.html"
    link = tmp_path / "link.html"
    link.symlink_to(target)
    write_text(str(link), "report")
    assert link.is_symlink() and target.read_text() == "report"


def test_a_fifo_is_written_to_and_stays_a_fifo(tmp_path):
    fifo = str(tmp_path / "out")
    os.mkfifo(fifo)
    got = []
    t = threading.Thread(target=lambda: got.append(open(fifo).read()), daemon=True)
    t.start()
    write_text(fifo, "through the pipe")
    t.join(timeout=10)
    assert got == ["through the pipe"] and stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert os.listdir(tmp_path) == ["out"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_a_full_disk_is_one_line_naming_what_failed(tmp_path):
    prog, stream = str(EXAMPLES / "wind_turbines.tdl"), str(EXAMPLES / "wind_turbines.jsonl")
    with open("/dev/full", "w") as full:
        p = subprocess.run([sys.executable, "-m", "reasoning.cli.main", "run", prog, "--stream",
                            stream, "--format", "jsonl"], stdout=full, stderr=subprocess.PIPE,
                           text=True, cwd=str(ROOT))
    assert p.returncode == 2
    assert p.stderr.strip().splitlines()[-1] == \
        "hypo: error: writing the output: No space left on device"
    p = subprocess.run([sys.executable, "-m", "reasoning.cli.main", "run", prog, "--stream", stream,
                        "--report", "/dev/full"], capture_output=True, text=True, cwd=str(ROOT))
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.strip().splitlines()[-1] == "hypo: error: /dev/full: No space left on device"
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)
