"""DP statements and a store to run them on (the SQL run, Postgres, warehouse and Spark tests)."""
from __future__ import annotations

from pathlib import Path

from dpspin_sql import ledger, store

OPTS = "epsilon = 1.0, delta = 1e-6, privacy_unit_column = user_id, contribution_bound = 1, mechanism = 'gaussian', top = 10"
EXAMPLE = (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({OPTS}) atom_id, DPSPIN_MASS(weight) "
           "FROM assignments JOIN records USING (record_id) WHERE split = 'target' GROUP BY atom_id")
EXAMPLE_RECORD = EXAMPLE.replace("privacy_unit_column = user_id, contribution_bound = 1, ", "")

# assignment rows the sketch must neutralise: NaN, ±inf, negative, > 1, duplicates, unknown atom, aux record
HOSTILE_ROWS = """
INSERT INTO assignments
      (SELECT record_id, 0 AS atom_id, 'NaN'::DOUBLE AS w FROM records WHERE split = 'target' ORDER BY record_id LIMIT 3)
UNION ALL (SELECT record_id, 1, 'inf'::DOUBLE FROM records WHERE split = 'target' ORDER BY record_id LIMIT 3)
UNION ALL (SELECT record_id, 2, '-inf'::DOUBLE FROM records WHERE split = 'target' ORDER BY record_id LIMIT 3)
UNION ALL (SELECT record_id, 3, -5.0 FROM records WHERE split = 'target' ORDER BY record_id LIMIT 3)
UNION ALL (SELECT record_id, 4, 1e9 FROM records WHERE split = 'target' ORDER BY record_id LIMIT 5)
UNION ALL (SELECT record_id, 5, 0.7 FROM records WHERE split = 'target' ORDER BY record_id LIMIT 5)
UNION ALL (SELECT record_id, 5, 0.9 FROM records WHERE split = 'target' ORDER BY record_id LIMIT 5)
UNION ALL (SELECT record_id, 999, 1.0 FROM records WHERE split = 'target' ORDER BY record_id LIMIT 5)
UNION ALL (SELECT record_id, 6, 1.0 FROM records WHERE split = 'aux' ORDER BY record_id LIMIT 5)
UNION ALL (SELECT 'no-such-record', 6, 1.0)
UNION ALL (SELECT record_id, 7, NULL FROM records WHERE split = 'target' ORDER BY record_id LIMIT 3)
"""


def build_store(path: Path) -> Path:
    """The demo's synthetic corpus, split by user, keyword-assigned, plus hostile assignment rows."""
    from dpspin_sql import assign, atoms, split
    from dpspin_sql.demo import TAXONOMY, corpus_relation

    con = store.connect(path, create=True)
    ledger.set_budget(con, 100.0, 1e-3)
    store.load_records(con, "synthetic", id_col="record_id", user_col="user_id", text_col="text",
                       relation=corpus_relation(con, 3, n_users=250))
    split.split(con, unit="user", aux_fraction=0.3, seed=3)
    atoms.install(con, [atoms.Atom(i, lab, desc) for i, (lab, desc) in enumerate(TAXONOMY)], builder="file")
    assign.assign(con, scorer="keyword", K=3)
    con.execute(HOSTILE_ROWS)
    con.close()
    return path


def stmt(*, unit="user", K=3, B=1.0, where="", mechanism="gaussian") -> str:
    unit_opts = f"privacy_unit_column = user_id, contribution_bound = {B}, " if unit == "user" else ""
    where = f" WHERE {where}" if where else ""
    return (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, {unit_opts}max_atoms_per_record = {K}, "
            f"mechanism = '{mechanism}') atom_id, DPSPIN_MASS(weight) FROM assignments JOIN records "
            f"USING (record_id){where} GROUP BY atom_id")
