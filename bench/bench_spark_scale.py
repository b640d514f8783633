"""The sketch at scale on a standalone Spark cluster, side by side with Tumult Analytics.

    .venv/bin/python bench/bench_spark_scale.py --rows 1e8 --data /tmp/scale \\
        --tumult-python /path/to/a/venv/with/tmlt.analytics/bin/python [--rounds 1]

(Tumult Analytics 0.21 needs pyspark 3.5, this project pyspark 4.3: give it its own venv, e.g.
`python3 -m venv tmlt && tmlt/bin/pip install tmlt.analytics`.)

Writes `--rows` assignment rows as a folder of Parquet files (record_id BIGINT, user_id
BIGINT, atom_id INTEGER, weight DOUBLE; three rows a record, about five records a user,
`--atoms` atoms, weights in [0.05, 0.45], a few rows repeated) and a store holding only the
dictionary and a budget. Then, alternating `--rounds` times, each on a fresh standalone
cluster on 127.0.0.1 (one master, one worker with every core and `--worker-memory`) started
from the side's own pyspark, and the same session settings (executor and driver memory,
8 shuffle partitions, UI off):

- **dpspin**: `dpspin sql --engine spark --spark-master URL` of one user-level statement
  over the files (epsilon 1, delta 1e-6, B = 1, K = 3, Gaussian): the audit reads the Parquet
  footers, the enforced sketch (per-record K and total ≤ 1 in fixed point, per-user clip to B)
  runs on the cluster, the m-vector comes back, the ledger is charged, the plan written;
- **tumult**: a Tumult Analytics session over the same files with `AddRowsWithID("user_id")`,
  `MaxRowsPerID(10)` and `sum(weight, low=0, high=0.1)` per atom over the public key set, under
  `RhoZCDPBudget` with the ρ of the same (ε, δ): the same per-user L1 bound (1) in the form
  Tumult offers (rows truncated at random, each weight clamped), Gaussian noise.

The two are not the same computation (dpspin clips each record to K atoms and total 1, then
each user's total to B exactly; Tumult keeps 10 random rows a user and clamps each weight);
both bound what one user changes by 1 in L1 and answer the same m sums. Wall time is the
client process, spawn to exit (a new driver included; the cluster's start is excluded and
reported apart); peak memory is the largest sum, sampled every 0.2 s, of the resident sets
of the client's processes and the worker's (its executor JVM included). Prints JSON; with
--out also writes it.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from tests.helpers.spark_cluster import free_port, wait_for  # noqa: E402 - the checkout is on the path

EPSILON, DELTA, BOUND, K = 1.0, 1e-6, 1, 3
SETTINGS = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "8", "spark.sql.session.timeZone": "UTC"}

STATEMENT = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = {eps}, delta = {delta}, "
             "privacy_unit_column = user_id, record_id_column = record_id, contribution_bound = {b}, "
             "max_atoms_per_record = {k}, mechanism = 'gaussian') atom_id, DPSPIN_MASS(weight) "
             "FROM read_parquet('{path}/*.parquet') GROUP BY atom_id")

TUMULT = r"""
import json, sys, time
from pyspark.sql import SparkSession
from tmlt.analytics import (AddRowsWithID, KeySet, MaxRowsPerID, QueryBuilder, RhoZCDPBudget, Session)
url, path, rho, atoms, settings = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), json.loads(sys.argv[5])
builder = SparkSession.builder.master(url).appName("tumult-bench")
for k, v in settings.items():
    builder = builder.config(k, v)
spark = builder.getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
df = spark.read.parquet(path)
session = Session.from_dataframe(privacy_budget=RhoZCDPBudget(rho), source_id="assignments", dataframe=df,
                                 protected_change=AddRowsWithID("user_id"))
keys = KeySet.from_dict({"atom_id": list(range(atoms))})
query = (QueryBuilder("assignments").enforce(MaxRowsPerID(10)).groupby(keys)
         .sum("weight", low=0.0, high=0.1, name="mass"))
answer = session.evaluate(query, RhoZCDPBudget(rho)).collect()
print(json.dumps({"rows": len(answer), "total": float(sum(r["mass"] for r in answer))}))
spark.stop()
"""


def _sid_rss(sids: set[int]) -> int:
    """The summed resident set (bytes) of every process in one of the sessions `sids`."""
    total = 0
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            if int(fields[3]) in sids:            # field 6 of stat: the session id
                total += int(fields[21]) * page   # field 24: rss in pages
        except (OSError, IndexError, ValueError):
            continue
    return total


class Sampler(threading.Thread):
    def __init__(self, sids: set[int]):
        super().__init__(daemon=True)
        self.sids, self.peak, self.done = sids, 0, threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.peak = max(self.peak, _sid_rss(self.sids))
            self.done.wait(0.2)


class Cluster:
    """One standalone master and worker on 127.0.0.1, in the foreground (ours to stop)."""

    def __init__(self, python: str, workdir: Path, cores: int, memory: str):
        home = subprocess.run([python, "-c", "import pyspark, os; print(os.path.dirname(pyspark.__file__))"],
                              capture_output=True, text=True, check=True).stdout.strip()
        self.home, self.python, self.workdir = Path(home), python, workdir
        self.cores, self.memory = cores, memory
        self.procs: list[subprocess.Popen] = []
        self.url = ""

    def _start(self, klass: str, args: list[str], log: Path) -> subprocess.Popen:
        env = dict(os.environ, SPARK_HOME=str(self.home), SPARK_NO_DAEMONIZE="1", SPARK_LOCAL_IP="127.0.0.1",
                   SPARK_LOG_DIR=str(self.workdir), SPARK_PID_DIR=str(self.workdir), PYSPARK_PYTHON=self.python)
        env.pop("PYTHONPATH", None)
        proc = subprocess.Popen([str(self.home / "bin" / "spark-class"), klass, *args], stdout=log.open("w"),
                                stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self.procs.append(proc)
        return proc

    def __enter__(self) -> Cluster:
        started = time.perf_counter()
        port = free_port()
        props = self.workdir / "cluster.conf"
        props.write_text("spark.master.rest.enabled false\n", encoding="utf-8")
        self.url = f"spark://127.0.0.1:{port}"
        master = self._start("org.apache.spark.deploy.master.Master",
                             ["--host", "127.0.0.1", "--port", str(port), "--webui-port", str(free_port()),
                              "--properties-file", str(props)], self.workdir / "master.log")
        if not wait_for(self.workdir / "master.log", "I have been elected leader", master, 120):
            raise RuntimeError("the master did not start: " + (self.workdir / "master.log").read_text()[-500:])
        worker = self._start("org.apache.spark.deploy.worker.Worker",
                             ["--host", "127.0.0.1", "--cores", str(self.cores), "--memory", self.memory,
                              "--webui-port", str(free_port()), "--work-dir", str(self.workdir / "work"), self.url],
                             self.workdir / "worker.log")
        if not wait_for(self.workdir / "worker.log", "Successfully registered with master", worker, 120):
            raise RuntimeError("the worker did not register: " + (self.workdir / "worker.log").read_text()[-500:])
        self.worker_sid = worker.pid          # start_new_session: its pid is its session id
        self.start_s = time.perf_counter() - started
        return self

    def __exit__(self, *exc) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=10)


def run_measured(argv: list[str], env: dict, cwd: Path, worker_sid: int, timeout: float) -> dict:
    started = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    sampler = Sampler({proc.pid, worker_sid})
    sampler.start()
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        sampler.done.set()
        sampler.join()
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[:3]} exited {proc.returncode}: {err[-2000:]}")
    return {"wall_s": round(wall, 2), "peak_rss_mb": round(sampler.peak / 2**20), "stdout": out.strip()[-300:]}


def write_data(folder: Path, rows: int, atoms: int) -> None:
    import duckdb

    if (folder / "_SUCCESS").exists():
        return
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    users = max(1, rows // 15)
    con = duckdb.connect()
    con.execute(f"""
        COPY (SELECT i // 3 AS record_id,
                     CAST(hash(i // 3, 'user') % {users} AS BIGINT) AS user_id,
                     CAST(CASE WHEN i % 97 = 0 THEN hash(i - 1) ELSE hash(i) END % {atoms} AS INTEGER) AS atom_id,
                     0.05 + CAST(hash(i, 'w') % 41 AS DOUBLE) / 100 AS weight
              FROM range({rows}) t(i))
        TO '{folder}' (FORMAT parquet, FILE_SIZE_BYTES '128MB', ROW_GROUP_SIZE 1000000)""")
    con.close()
    (folder / "_SUCCESS").write_text(f"{rows} rows\n", encoding="utf-8")


def make_store(path: Path, atoms: int) -> None:
    from tests.helpers.core import install_atoms, new_store

    if path.exists():
        path.unlink()
    con = new_store(path, epsilon_budget=1e6, delta_budget=0.5)
    install_atoms(con, range(atoms), [f"theme {a}" for a in range(atoms)])
    con.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e7)
    parser.add_argument("--atoms", type=int, default=200)
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "dpspin_scale")
    parser.add_argument("--tumult-python", default=None, help="a Python with tmlt.analytics (skipped without)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--worker-memory", default="14g")
    parser.add_argument("--executor-memory", default="12g")
    parser.add_argument("--driver-memory", default="2g")
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rows = int(args.rows)
    folder = args.data / f"assignments_{rows}"
    t0 = time.perf_counter()
    write_data(folder, rows, args.atoms)
    gen_s = time.perf_counter() - t0
    store_path = args.data / "scale.duckdb"
    make_store(store_path, args.atoms)
    from dpspin_sql.accountant import rho_limit  # the ρ whose (ε, δ) curve passes (1, 1e-6), for Tumult

    rho = rho_limit(EPSILON, DELTA)
    settings = dict(SETTINGS, **{"spark.executor.memory": args.executor_memory,
                                 "spark.driver.memory": args.driver_memory})
    statement = STATEMENT.format(eps=EPSILON, delta=DELTA, b=BOUND, k=K, path=folder)
    cores = os.cpu_count() or 2
    sides = [("dpspin", sys.executable)] + ([("tumult", args.tumult_python)] if args.tumult_python else [])
    results: dict[str, list[dict]] = {name: [] for name, _ in sides}
    for round_ in range(args.rounds):
        for name, python in sides:
            with tempfile.TemporaryDirectory(dir=args.data) as work:
                work_dir = Path(work)
                with Cluster(python, work_dir, cores, args.worker_memory) as cluster:
                    if name == "dpspin":
                        plan = work_dir / "plan.json"
                        env = dict(os.environ, DPSPIN_SPARK_EXECUTOR_MEMORY=args.executor_memory,
                                   DPSPIN_SPARK_DRIVER_MEMORY=args.driver_memory)
                        argv = [str(Path(sys.executable).with_name("dpspin")), "sql", "--db", str(store_path),
                                "--engine", "spark", "--spark-master", cluster.url, "--out", str(plan), statement]
                        got = run_measured(argv, env, args.data, cluster.worker_sid, args.timeout)   # files root
                        got["plan_bytes"] = plan.stat().st_size
                    else:
                        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
                        env.update(PYSPARK_PYTHON=python, PYSPARK_DRIVER_PYTHON=python)   # its executors' Python
                        argv = [python, "-c", TUMULT, cluster.url, str(folder), repr(rho), str(args.atoms),
                                json.dumps(settings)]
                        got = run_measured(argv, env, work_dir, cluster.worker_sid, args.timeout)
                    got["cluster_start_s"] = round(cluster.start_s, 1)
            got["round"] = round_ + 1
            results[name].append(got)
            print(json.dumps({name: got}), file=sys.stderr, flush=True)
    summary: dict = {"rows": rows, "atoms": args.atoms, "data_written_s": round(gen_s, 1), "cores": cores,
                     "worker_memory": args.worker_memory, "rounds": args.rounds,
                     "load_average": os.getloadavg(), "runs": results}
    for name in results:
        summary[name] = {"wall_s": statistics.median(r["wall_s"] for r in results[name]),
                         "peak_rss_mb": statistics.median(r["peak_rss_mb"] for r in results[name])}
    if "tumult" in summary:
        summary["dpspin/tumult"] = {k: round(summary["dpspin"][k] / summary["tumult"][k], 2)
                                    for k in ("wall_s", "peak_rss_mb")}
    text = json.dumps(summary, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
