"""A real PostgreSQL server on 127.0.0.1 for the tests (initdb + pg_ctl, as the postgres user
when root); tests that need it skip with the reason when the server binaries are absent."""
from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest


def pg_bin(name: str) -> str | None:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found[-1] if found else shutil.which(name)


def as_postgres_user() -> list[str]:
    """initdb and postgres refuse to run as root: run them as the `postgres` user then."""
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


@pytest.fixture(scope="module")
def pg_dsn():
    psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed (pip install -e '.[postgres]')")
    initdb, pg_ctl = pg_bin("initdb"), pg_bin("pg_ctl")
    if not initdb or not pg_ctl:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) are not installed")
    work = Path(tempfile.mkdtemp(prefix="dpspin-pg-"))
    if os.geteuid() == 0:
        shutil.chown(work, "postgres")
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = work / "data"
    subprocess.run([*as_postgres_user(), initdb, "-D", str(data), "-A", "trust", "-U", "postgres"],
                   check=True, capture_output=True)
    subprocess.run([*as_postgres_user(), pg_ctl, "-D", str(data), "-l", str(work / "log"), "-w", "-o",
                    f"-p {port} -k {work} -c listen_addresses=127.0.0.1", "start"], check=True, capture_output=True)
    try:
        dsn = f"host=127.0.0.1 port={port} user=postgres dbname=postgres"
        psycopg.connect(dsn).close()
        yield dsn
    finally:
        subprocess.run([*as_postgres_user(), pg_ctl, "-D", str(data), "-m", "fast", "-w", "stop"],
                       capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
