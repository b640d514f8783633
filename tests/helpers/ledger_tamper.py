"""What an attacker with write access to a store does to its ledger, as helpers for the
tamper tests: rebuild a consistent hash chain after an edit (both tables, in seq order)."""
from __future__ import annotations

from dpspin_sql import ledger


def rehash(con, *, plans: bool = False) -> None:
    """Recompute every row's prev_hash and row_hash in seq order and set the head to the
    end, as a writer who knows the format would; with `plans`, also rewrite each stored
    plan's ledger_chain to its row's new hash (the most thorough in-store forgery)."""
    rows = con.execute("SELECT seq, 'release', release_id FROM ledger UNION ALL "
                       "SELECT seq, 'event', event_id FROM ledger_events ORDER BY 1").fetchall()
    prev = ledger.GENESIS
    for seq, kind, ident in rows:
        if kind == "release":
            r = con.execute("SELECT seq, release_id, dataset, created_at, mechanism, epsilon, delta, params, "
                            "measurements, plan_path, plan_stored FROM ledger WHERE release_id = ?", [ident]).fetchall()[0]
            h = ledger._Row(r[0], prev, r[1], r[2], r[3], r[4], r[5], r[6], r[7] or "", r[8] or "", r[9], r[10]).digest()
            con.execute("UPDATE ledger SET prev_hash = ?, row_hash = ? WHERE release_id = ?", [prev, h, ident])
            if plans:
                con.execute("UPDATE release_plans SET plan = json_object('release_id', release_id, "
                            "'ledger_chain', ?, 'privacy_cost', json_extract(plan, '$.privacy_cost'), "
                            "'atoms', json_extract(plan, '$.atoms')) WHERE release_id = ?", [h, ident])
        else:
            e = con.execute("SELECT seq, event_id, kind, dataset, created_at, epsilon_total, delta_total, details "
                            "FROM ledger_events WHERE event_id = ?", [ident]).fetchall()[0]
            h = ledger._Event(e[0], prev, e[1], e[2], e[3], e[4], e[5], e[6], e[7]).digest()
            con.execute("UPDATE ledger_events SET prev_hash = ?, row_hash = ? WHERE event_id = ?", [prev, h, ident])
        prev = h
    last = rows[-1][0] if rows else 0
    con.execute("UPDATE ledger_head SET seq = ?, head_hash = ?", [last, prev])
