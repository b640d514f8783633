"""What an attacker with write access does to a store's ledger, as a helper for the tamper
tests: rebuild a consistent hash chain after an edit (both tables, in seq order), and, for
the most thorough in-store forgery, the stored plans and the events that pin them too."""
from __future__ import annotations

import json

from dpspin_sql import ledger


def rehash(con, *, plans: bool = False) -> None:
    """Recompute every row's prev_hash and row_hash in seq order and set the head to the
    end, as a writer who knows the format would. With `plans`, each stored plan's
    ledger_chain is set to its row's new hash and its plan event re-pins the new text."""
    rows = con.execute("SELECT seq, 'release', release_id FROM ledger UNION ALL "
                       "SELECT seq, 'event', event_id FROM ledger_events ORDER BY 1").fetchall()
    prev = ledger.GENESIS
    for _, kind, ident in rows:
        if kind == "release":
            r = con.execute("SELECT seq, release_id, dataset, created_at, mechanism, epsilon, delta, params, "
                            "measurements, plan_path, plan_stored FROM ledger WHERE release_id = ?", [ident]).fetchall()[0]
            h = ledger._Row(r[0], prev, r[1], r[2], r[3], r[4], r[5], r[6], r[7] or "", r[8] or "", r[9], r[10]).digest()
            con.execute("UPDATE ledger SET prev_hash = ?, row_hash = ? WHERE release_id = ?", [prev, h, ident])
            if plans:
                got = con.execute("SELECT plan FROM release_plans WHERE release_id = ?", [ident]).fetchall()
                if got:
                    plan = json.loads(got[0][0])
                    plan["ledger_chain"] = h
                    con.execute("UPDATE release_plans SET plan = ? WHERE release_id = ?",
                                [json.dumps(plan, indent=2, ensure_ascii=False), ident])
        else:
            e = con.execute("SELECT seq, event_id, kind, dataset, created_at, epsilon_total, delta_total, details "
                            "FROM ledger_events WHERE event_id = ?", [ident]).fetchall()[0]
            details = e[7]
            if plans and e[2] == "plan":
                rid = json.loads(details)["release_id"]
                got = con.execute("SELECT plan, dictionary FROM release_plans WHERE release_id = ?", [rid]).fetchall()
                if got:
                    details = json.dumps({"dictionary_sha256": ledger._text_sha(got[0][1]),
                                          "plan_sha256": ledger._text_sha(got[0][0]), "release_id": rid},
                                         sort_keys=True)
            h = ledger._Event(e[0], prev, e[1], e[2], e[3], e[4], e[5], e[6], details).digest()
            con.execute("UPDATE ledger_events SET prev_hash = ?, row_hash = ?, details = ? WHERE event_id = ?",
                        [prev, h, details, ident])
        prev = h
    last = rows[-1][0] if rows else 0
    con.execute("UPDATE ledger_head SET seq = ?, head_hash = ?", [last, prev])
