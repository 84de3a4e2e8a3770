"""A throw-away PostgreSQL server on the loopback address for the Airflow tests (issue 43:
Airflow's metadata database as in production, docker/compose.yaml): Debian's `postgresql`
binaries, a data folder of its own, a free port, trust authentication on 127.0.0.1 only;
stopped (fast shutdown, then killed) when the block ends.  As root, the server runs as the
`postgres` user (initdb refuses root)."""
from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from typing import Iterator


def pg_bin() -> str | None:
    """The folder of Debian's PostgreSQL server binaries (the newest version), if any."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0)
    return os.path.dirname(found[-1]) if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def postgres(db: str = "airflow") -> Iterator[str]:
    """Start a server, create database `db`, yield its SQLAlchemy URL (psycopg2)."""
    bindir = pg_bin()
    if bindir is None:
        raise RuntimeError("PostgreSQL is not installed (scripts/test.sh installs Debian's "
                           "postgresql)")
    as_root = os.geteuid() == 0
    run_as = ["runuser", "-u", "postgres", "--"] if as_root else []
    top = tempfile.mkdtemp(prefix="hypo-pg-")
    data, sock = os.path.join(top, "data"), os.path.join(top, "sock")
    os.makedirs(sock)
    if as_root:
        shutil.chown(top, "postgres", "postgres")
        shutil.chown(sock, "postgres", "postgres")
    port = _free_port()
    log = os.path.join(top, "server.log")

    def run(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run([*run_as, *argv], capture_output=True, text=True,
                              timeout=timeout, cwd=top)

    started = False
    try:
        r = run(f"{bindir}/initdb", "-D", data, "-U", "postgres", "--auth=trust",
                "-E", "UTF8", "--locale=C")
        if r.returncode:
            raise RuntimeError(f"initdb failed: {r.stderr[-2000:]}")
        opts = f"-c listen_addresses=127.0.0.1 -p {port} -k {sock} -c fsync=off"
        r = run(f"{bindir}/pg_ctl", "-D", data, "-l", log, "-o", opts, "-w", "-t", "120",
                "start")
        started = r.returncode == 0
        if not started:
            tail = open(log).read()[-2000:] if os.path.exists(log) else ""
            raise RuntimeError(f"PostgreSQL did not start: {r.stderr[-1000:]} {tail}")
        r = run(f"{bindir}/createdb", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", db)
        if r.returncode:
            raise RuntimeError(f"createdb failed: {r.stderr[-1000:]}")
        yield f"postgresql+psycopg2://postgres@127.0.0.1:{port}/{db}"
    finally:
        if started:
            r = run(f"{bindir}/pg_ctl", "-D", data, "-m", "fast", "-w", "-t", "60", "stop")
            if r.returncode:  # the postmaster's pid is the data folder's first line
                with contextlib.suppress(OSError, ValueError):
                    pid = int(open(os.path.join(data, "postmaster.pid")).readline())
                    os.kill(pid, 9)
                    time.sleep(1)
        shutil.rmtree(top, ignore_errors=True)
