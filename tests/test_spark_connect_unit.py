"""Spark Connect's client errors as one line (issue 43), without a server: a URL where
nothing listens fails at once; the client giving up on a lost server mid-command is the
`lost the Spark Connect server` line, not a library error's "run verify"."""
from __future__ import annotations

import socket

from jobs.tick import spark as S
from lakehelp import hypo


def test_a_url_where_nothing_listens_is_one_line_at_once(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    rc, out, err = hypo("lake", "--lake", str(tmp_path / "l"), "init", "--program",
                        "examples/wind_turbines.tdl")
    assert rc == 0, err
    rc, out, err = hypo("lake", "--lake", str(tmp_path / "l"), "tick", "0", "--executor",
                        "spark", "--master", f"sc://127.0.0.1:{port}")
    assert rc == 2 and err.count("\n") == 1, err
    assert f"no Spark Connect server answers at sc://127.0.0.1:{port}" in err
    assert "spark-cluster.sh start --connect" in err


def test_a_lost_server_is_named_not_a_damaged_lake(monkeypatch):
    SparkConnectGrpcException = type("SparkConnectGrpcException", (Exception,), {})
    e = SparkConnectGrpcException("<_MultiThreadedRendezvous of RPC that terminated with:\n"
                                  "status = StatusCode.UNAVAILABLE ...")
    assert S.connect_lost(e) == ""  # no Connect session in this process: not ours
    monkeypatch.setitem(S._remote, "sc://h:15002", object())
    line = S.connect_lost(e)
    assert line.startswith("lost the Spark Connect server at sc://h:15002") and \
        "(unavailable)" in line and "\n" not in line
    assert S.connect_lost(ValueError("x")) == ""
