"""Run a DP-SPIN statement: parse → audit → rewrite → sketch → the core's release and ledger.

The sketch is computed by the rewritten core query (DuckDB here, or Spark via
`dpspin_sql.spark`), and the plan comes out of the same `release_and_charge` as
`dpspin release`: same OpenDP measurements, same ledger, same plan file.
"""
from __future__ import annotations

from pathlib import Path

import duckdb

from dpspin_sql import ledger
from dpspin_sql.errors import BadInput
from dpspin_sql.sketch import Sketch, align, target_facts
from dpspin_sql.sql import audit_statement
from dpspin_sql.sql.audit import Audited
from dpspin_sql.sql.errors import refuse
from dpspin_sql.sql.rewrite import params
from dpspin_sql.sql.transpile import sketch_sql

ENGINES = ("duckdb", "spark", "postgres")


def release_config(audited: Audited, m: int | None = None):
    """The ReleaseConfig `dpspin release` would build from the same options."""
    from dpspin_sql.release import ReleaseConfig

    from dpspin_sql.sql.options import OPTIONS

    kwargs = {OPTIONS[name].release_name: value for name, value in audited.options.values.items()
              if name != "privacy_unit_column"}
    if "B" in kwargs:
        kwargs["B"] = float(kwargs["B"])
    kwargs["unit"] = audited.unit
    try:
        return ReleaseConfig(**kwargs).validate(m)
    except BadInput as exc:
        refuse(f"the options are out of range: {str(exc).removeprefix('error: ')}",
               audited.options.nodes.get("top") if "-L" in str(exc) else audited.statement.args["hint"])


def duckdb_sketch(con: duckdb.DuckDBPyConnection, audited: Audited) -> Sketch:
    """The enforced sketch of an audited statement, computed by DuckDB from the rewritten core query.

    n_records / n_users are those of the whole target split (public shape, as in
    `compute_sketch`), never counts of the filtered records, which would not be DP.
    """
    atom_ids, n_records, n_units = target_facts(con, audited.unit)
    sql = sketch_sql(audited, "duckdb", pretty=False, bind_params=False)
    try:
        rows = con.execute(sql, params(audited)).fetchall()
    except duckdb.Error:
        # never the engine's message: it can quote protected values
        raise BadInput("the sketch query failed on this store") from None
    return Sketch(atom_ids=atom_ids, mass=align(atom_ids, rows), unit=audited.unit, K=audited.K, B=audited.B,
                  n_records=n_records, n_users=n_units)


def run_sql(con: duckdb.DuckDBPyConnection, sql: str, out_path: str | Path | None = None, *,
            engine: str = "duckdb", dataset: str = ledger.DEFAULT_DATASET, spark=None,
            spark_assign: str = "auto", pg=None, pg_dsn: str | None = None):
    """Audit and run one DP statement; charge the ledger; write and return the plan.

    Raises BadInput (unparseable, bad store), AuditRefusal (unsafe statement) or
    BudgetExceeded; in every one of those cases no plan is written and nothing is charged.
    `engine="spark"` computes the sketch on Spark (`spark` session, or a local one);
    `spark_assign` is auto | scorer | table (see dpspin_sql.spark). `engine="postgres"`
    computes it on a PostgreSQL server (`pg` connection or `pg_dsn`) holding the tables.
    """
    from dpspin_sql.atoms import current_atoms
    from dpspin_sql.pipeline import release_and_charge
    from dpspin_sql.release import make_mechanism

    if engine not in ENGINES:
        raise BadInput(f"--engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    audited = audit_statement(sql)
    atoms = current_atoms(con)
    if not atoms:
        raise BadInput("the store has no atoms: load a taxonomy (dpspin atoms load) or build one (dpspin atoms build)")
    config = release_config(audited, len(atoms))
    eps, delta = make_mechanism(config, len(atoms)).cost
    ledger.check(con, eps, delta, dataset)          # refuse an over-budget release before touching the data
    if engine == "spark":
        from dpspin_sql.spark import spark_sketch

        sketch = spark_sketch(con, audited, spark=spark, assign=spark_assign)
    elif engine == "postgres":
        from dpspin_sql import postgres

        postgres.check_filters(audited)
        if audited.unit == "user":  # the store's own aux side shaped the dictionary and scorer
            from dpspin_sql.sketch import check_user_level

            check_user_level(con, 0)
        if pg is None and not pg_dsn:
            raise BadInput("the postgres engine needs --pg-dsn (or DPSPIN_PG_DSN)")
        sketch = postgres.postgres_sketch(pg or postgres.connect(pg_dsn), audited)
    else:
        sketch = duckdb_sketch(con, audited)
    return release_and_charge(con, config, sketch, out_path=out_path, atoms=atoms, dataset=dataset,
                              extra_params={"sql": " ".join(sql.split()), "engine": engine})


def emit_sketch(sql: str, dialect: str = "duckdb") -> str:
    """The audited statement's enforced sketch query for `dialect` (nothing is run or charged)."""
    return sketch_sql(audit_statement(sql), dialect) + ";\n"
