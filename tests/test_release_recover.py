"""A paid-for release is never lost (issue 23): the plan is stored with its charge and
`dpspin recover` writes it again exactly; outputs are probed before the charge, room
included, so an unwritable or full location refuses without spending; a store on a full
disk says "no space left on device", never "store busy" after a wait.

The full-disk and read-only cases run on a small tmpfs mounted in a user namespace
(`unshare --user --map-root-user --mount`), so they need no privileges of their own; they
skip with the reason where the kernel does not allow that.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from dpspin_sql import ledger, store
from dpspin_sql.release import release
from dpspin_sql.request import ReleaseRequest
from tests.helpers.core import assert_one_line_error, cli, synthetic_store
from tests.helpers.prereq import environment_skipif

REQUEST = ReleaseRequest(mechanism="laplace", epsilon=0.25, unit="user", L=3)
DPSPIN = Path(sys.executable).with_name("dpspin")


@pytest.fixture
def released(tmp_path):
    """A store with two releases whose plans are in plans/."""
    db = synthetic_store(tmp_path / "s.duckdb", epsilon_budget=3.0)
    (tmp_path / "plans").mkdir()
    con = store.connect(db)
    ids = [release(con, REQUEST, out=tmp_path / "plans" / f"p{i}.json").release_id for i in range(2)]
    con.close()
    return db, ids


def test_recover_writes_the_stored_plan_and_dictionary_byte_for_byte(released, tmp_path, capsys):
    db, ids = released
    for rid, original in ((ids[0], "p0"), (None, "p1")):   # no --release: the last one
        out = tmp_path / f"again_{original}.json"
        args = ["recover", "--db", db, "--out", out] + (["--release", rid] if rid else [])
        rc, _, err = cli(capsys, *args)
        assert rc == 0, err
        assert out.read_bytes() == (tmp_path / "plans" / f"{original}.json").read_bytes()
        assert (out.with_name(out.stem + ".dictionary.json").read_bytes()
                == (tmp_path / "plans" / f"{original}.dictionary.json").read_bytes())
    rc, _, err = cli(capsys, "summarize", tmp_path / "again_p1.json")
    assert rc == 0, err


@pytest.mark.parametrize("args, code, said", [
    (["--release", "nosuchrelease"], 2, "no release 'nosuchrelease'"),
    (["--out-is-store"], 2, "is the store"),
    (["--out-exists"], 2, "already exists"),
])
def test_recover_refuses_what_it_cannot_do(released, tmp_path, capsys, args, code, said):
    db, _ = released
    out = tmp_path / "r.json"
    if args == ["--out-is-store"]:
        args, out = [], db
    elif args == ["--out-exists"]:
        args, out = [], tmp_path / "plans" / "p0.json"
    rc, so, err = cli(capsys, "recover", "--db", db, "--out", out, *args)
    assert_one_line_error(rc, so, err, code=code)
    assert said in err


def test_recover_replaces_an_existing_plan_with_force(released, tmp_path, capsys):
    db, ids = released
    target = tmp_path / "plans" / "p1.json"
    rc, _, err = cli(capsys, "recover", "--db", db, "--release", ids[0], "--out", target, "--force")
    assert rc == 0, err
    assert json.loads(target.read_text())["release_id"] == ids[0]


def test_a_release_charged_without_a_stored_plan_says_so(tmp_path, capsys):
    """A library charge without `publish` (an experiment baseline's) stores no plan."""
    from tests.test_ledger import charge

    con = synthetic_store(tmp_path / "s.duckdb", close=False)
    rid = charge(con, 0.1).release_id
    con.close()
    rc, so, err = cli(capsys, "recover", "--db", tmp_path / "s.duckdb", "--release", rid, "--out",
                      tmp_path / "r.json")
    assert_one_line_error(rc, so, err, code=2)
    assert "has no stored plan" in err


def test_recover_refuses_a_stored_plan_that_was_edited(released, tmp_path, capsys):
    db, ids = released
    con = duckdb.connect(str(db))
    con.execute("UPDATE release_plans SET plan = replace(plan, '\"rank\": 1', '\"rank\": 1, \"x\": 0') "
                "WHERE release_id = ?", [ids[1]])
    con.close()
    rc, so, err = cli(capsys, "recover", "--db", db, "--out", tmp_path / "r.json")
    assert_one_line_error(rc, so, err, code=1)
    assert "edited" in err and not (tmp_path / "r.json").exists()


def test_the_stored_plan_is_what_the_library_returned(released, tmp_path):
    db, _ = released
    con = store.connect(db)
    plan = release(con, REQUEST)   # no file: the plan is still stored with its charge
    rid, text, _ = ledger.stored_plan(con, plan.release_id)
    con.close()
    assert rid == plan.release_id and text == plan.to_json()


# --------------------------------------------------------------------------- locations that cannot take a write

def _userns_ok() -> bool:
    if not shutil.which("unshare") or not DPSPIN.exists():
        return False
    try:
        return subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True,
                              timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


needs_userns = environment_skipif(not _userns_ok(), "unshare --user --mount is not allowed here (a tmpfs "
                                                           "of our own is how a full or read-only disk is made)")


def _in_namespace(tmp_path: Path, script: str) -> dict:
    """Run a bash `script` in a user+mount namespace where $MNT is a fresh tmpfs; it writes
    `rc_NAME` / `err_NAME` files into $HOST (outside the tmpfs). Returns {NAME: (rc, err)}."""
    host = tmp_path / "host"
    host.mkdir(exist_ok=True)
    mnt = tmp_path / "mnt"
    mnt.mkdir(exist_ok=True)
    body = (f"set -u\nexport HOST={host} MNT={mnt} D={DPSPIN} DPSPIN_LOCK_TIMEOUT=20\n"
            'run() { name=$1; shift; "$D" "$@" >"$HOST/out_$name" 2>"$HOST/err_$name"; echo $? >"$HOST/rc_$name"; }\n'
            + script)
    proc = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "bash", "-c", body],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return {p.name[3:]: (int(p.read_text()), (host / f"err_{p.name[3:]}").read_text())
            for p in host.glob("rc_*")}


def _ledger_rows(db: Path) -> list:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT release_id, row_hash FROM ledger ORDER BY seq").fetchall()
    finally:
        con.close()


FILL = 'dd if=/dev/zero of="$MNT/fill" bs=64k 2>/dev/null; dd if=/dev/zero of="$MNT/fill2" bs=1k 2>/dev/null; sync\n'


@needs_userns
def test_a_store_on_a_full_disk_says_no_space_left_not_store_busy(released, tmp_path):
    db, _ = released
    before = _ledger_rows(db)
    got = _in_namespace(tmp_path, f"""
mount -t tmpfs -o size=24m tmpfs "$MNT"
cp {db} "$MNT/s.duckdb"
{FILL}
run init init --db "$MNT/s.duckdb" --epsilon-budget 5
run release release --db "$MNT/s.duckdb" --mechanism laplace --epsilon 0.25 --unit user -L 3 --out "$HOST/p.json"
rm -f "$MNT/fill" "$MNT/fill2"
cp "$MNT/s.duckdb" "$HOST/after.duckdb"; [ -f "$MNT/s.duckdb.wal" ] && cp "$MNT/s.duckdb.wal" "$HOST/after.duckdb.wal"
true
""")
    for name in ("init", "release"):
        rc, err = got[name]
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert rc == 2 and len(lines) == 1, (name, rc, err)
        assert "no space left on device" in lines[0] and "store busy" not in lines[0], lines[0]
    assert not (tmp_path / "host" / "p.json").exists()
    after = tmp_path / "host" / "after.duckdb"
    assert _ledger_rows(after) == before
    con = store.connect(after, read_only=True)
    assert ledger.verify(con) == []
    con.close()


@needs_userns
@pytest.mark.parametrize("how, said", [
    ("full", "no space left on device"),
    ("read-only", "read-only file system"),
])
def test_an_out_location_that_cannot_take_the_plan_refuses_before_the_charge(released, tmp_path, how, said):
    db, _ = released
    before = _ledger_rows(db)
    prepare = FILL if how == "full" else 'mount -o remount,ro "$MNT"\n'
    got = _in_namespace(tmp_path, f"""
mount -t tmpfs -o size=1m tmpfs "$MNT"
{prepare}
run release release --db {db} --mechanism laplace --epsilon 0.25 --unit user -L 3 --out "$MNT/p.json"
ls -A "$MNT" > "$HOST/listing"
""")
    rc, err = got["release"]
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2 and len(lines) == 1, err
    assert said in lines[0] and "--out" in lines[0], lines[0]
    assert _ledger_rows(db) == before
    listing = (tmp_path / "host" / "listing").read_text().split()
    assert not [n for n in listing if n.startswith(".p.json.")], listing   # the probe left nothing


@environment_skipif(os.geteuid() == 0, "root writes in a directory without write permission")
def test_an_out_directory_without_write_permission_refuses_before_the_charge(released, tmp_path, capsys):
    db, _ = released
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    before = _ledger_rows(db)
    try:
        rc, so, err = cli(capsys, "release", "--db", db, "--mechanism", "laplace", "--epsilon", "0.25",
                          "--unit", "user", "-L", "3", "--out", locked / "p.json")
    finally:
        locked.chmod(0o755)
    assert_one_line_error(rc, so, err, code=2)
    assert "cannot write in" in err and _ledger_rows(db) == before
