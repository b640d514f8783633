"""Spark daemons started on 127.0.0.1 for the tests and bench/bench_spark_scale.py: a free port, and
waiting for a daemon's log to say it is up."""
from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(log: Path, text: str, proc: subprocess.Popen, seconds: float) -> bool:
    """Whether `text` appeared in `log` within `seconds` (False as soon as `proc` ends)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text(encoding="utf-8", errors="replace"):
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.5)
    return False
