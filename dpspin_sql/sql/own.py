"""DP statements over the user's own tables, views and files (docs/SQL.md, "Your own tables").

    SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, mechanism = 'gaussian',
                                             privacy_unit_column = author, contribution_bound = 1)
           theme AS atom, DPSPIN_MASS(score)
    FROM theme_scores JOIN reviews USING (review_id)
    GROUP BY theme

The statement names the columns, as BigQuery's differential-privacy SQL does:

- the **atom** is the GROUP BY column (projected once, any alias): an integer column is
  matched to the dictionary by `atom_id`, a text column by `label`; a value that is not a
  dictionary atom is dropped inside the sketch, silently (never an error);
- the **weight** is the argument of DPSPIN_MASS, a column of the same relation (the
  *assignments-like* relation);
- the **record id** is the join key (`USING (key)` or `ON a.x = r.y`, the one equi-join
  allowed) or, over one relation, `record_id_column = col` (or the unit column itself at
  record level);
- the **privacy unit** is `privacy_unit_column`: the record id (or omitted) is record
  level; any other column is user level, a column of the joined *records-like* relation
  (or of the one relation).

A relation is a table or view of the user's database (`name`, `schema.name` or
`catalog.schema.name`, never the store's catalog) or a file, `read_parquet('path')` /
`read_csv('path')` with a literal path under the files root (default: the current
directory). The audit reads the catalog — column names and types, which are public
schema — and, for a file, its header (Parquet schema; a CSV's header line, every column
read as text), never a row.

Each relation reaches the unchanged sketch query (queries/sketch_*.sql, through
`rewrite.bind_source`) as a projection under the logical names: `record_id` and `user_id`
as the integers they are where every relation gives that id as a native integer (`_key`),
else as VARCHAR (CAST from integers, text or UUID never fails), `atom_id` as INTEGER
(TRY_CAST: an out-of-range id is NULL, so dropped) or the dictionary's id of the label,
`weight` as DOUBLE (CAST from numbers; TRY_CAST from text), and every column a filter
reads under a private name (`fa0`, `fr1`, ...), numbers as DOUBLE. So nothing a table
holds can make the query fail, and the bounds are the query's own. A view, a CTE or a FROM
subquery is read as sql/rowwise.py expanded, checked and emitted it — row-wise, every value in
its total form, every name qualified as the audit and DuckDB's binder resolved it — never as
the view's own text; its record id must name one base record (`_record_key`), and the ledger
records which base tables and columns those are. At user level, units that have auxiliary
records in the store (they shaped the dictionary) are dropped from the sketch, never refused:
a count of them would be a fact about the data.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from sqlglot import exp

from dpspin_sql.errors import AuditRefusal
from dpspin_sql.sketch.totality import BOOL, DATE, DOUBLE, JSON, TEXT
from dpspin_sql.source import Relation, SketchSource
from dpspin_sql.sql.errors import refuse
from dpspin_sql.sql.resolve import ASSIGNMENTS, RECORDS, Catalog, Rel, Scope
from dpspin_sql.sql.rowwise import kind_of
from dpspin_sql.sql.totality import check_predicate

__all__ = ["audit_own", "kind_of"]

# the type a filter sees a column as (numbers are projected as DOUBLE)
_FILTER_TYPE = {"int": DOUBLE, "float": DOUBLE, "text": TEXT, "bool": BOOL, "date": DATE, "json": JSON}


def _join_keys(join: exp.Join, scope: Scope) -> tuple[tuple[Rel, str], tuple[Rel, str]]:
    for key, value in join.args.items():
        if key in ("this", "using", "on") or not value:
            continue
        if key == "kind" and str(value).upper() == "INNER":
            continue
        refuse(f"a {str(value).upper() if isinstance(value, str) else key.upper()} join; only [INNER] JOIN "
               "… USING (key) or ON a.key = r.key is allowed", join)
    using, on = join.args.get("using") or [], join.args.get("on")
    if using:
        if len(using) != 1 or not isinstance(using[0], (exp.Identifier, exp.Column)):
            refuse("join USING exactly one key column", join)
        name = using[0].name.lower()
        for rel in scope.rels:
            if name not in rel.columns:
                refuse(f"the join key {using[0].name!r} is not a column of {rel.label}", join)
        return (scope.rels[0], name), (scope.rels[1], name)
    if isinstance(on, exp.EQ) and isinstance(on.this, exp.Column) and isinstance(on.expression, exp.Column):
        left, right = scope.resolve(on.this, "ON"), scope.resolve(on.expression, "ON")
        if left[0] is not right[0]:
            return (left, right) if left[0] is scope.rels[0] else (right, left)
    refuse("the two relations must be joined by one equi-join key: JOIN … USING (key) or ON a.key = r.key",
           on if on is not None else join)


# -- the audit over own relations -------------------------------------------------------------------

def audit_own(select: exp.Select, scope: Scope, join: exp.Join | None, atom: tuple[Rel, str],
              weight: tuple[Rel, str], options, cat: Catalog, check_where_nodes) -> dict:
    """The part of the audit (sql/audit.py) that only a statement over the user's own relations
    has: the join key, the unit, the role columns' types, what one base record is, the filters
    under private names and the sketch source. Returns the fields of its `Audited`."""
    from dpspin_sql.sql.options import to_request

    rels = scope.rels
    keys = _join_keys(join, scope) if join is not None else None
    group = select.args["group"]
    A = atom[0]
    if weight[0] is not A:
        refuse("DPSPIN_MASS's weight and the atom must be columns of the same relation (the assignments-like "
               "one)", select)
    R = next((r for r in rels if r is not A), None)
    if R is not None:
        R.letter = "r"
        scope.prefer = R
    unit, rid_a, rid_r, user = _keys_and_unit(options, scope, A, R, keys)

    # types of the role columns
    if A.kind(atom[1]) not in ("int", "text"):
        refuse(f"the atom column {atom[1]!r} is {A.columns[atom[1]][1]}; it must hold integer atom ids or "
               "text labels", group.expressions[0])
    if A.kind(weight[1]) not in ("int", "float", "text"):
        refuse(f"the weight column {weight[1]!r} is {A.columns[weight[1]][1]}, not a number", select)
    for rel, name, what in ((A, rid_a, "record id"), (R, rid_r, "record id"), *([user] if user else [])):
        if rel is not None and name is not None and rel.kind(name) not in ("int", "text", "uuid"):
            refuse(f"the {what} column {name!r} of {rel.label} is {rel.columns[name][1]}; ids are integers, "
                   "text or UUIDs", select)

    record_key = _record_key(((A, rid_a), (R, rid_r)), select)
    records_filter, assignments_filter, types = _filters(select, scope, R, check_where_nodes)
    source = _source(cat, unit, A, R, atom[1], weight[1], rid_a, rid_r, user, record_key)
    request = to_request(options, unit, select.args["hint"])
    return {"options": options, "request": request, "records_filter": records_filter, "record_key": record_key,
            "assignments_filter": assignments_filter, "statement": select, "source": source, "filter_types": types}


def _record_key(ids, select: exp.Select) -> dict[str, str]:
    """{protected base relation: its record id column}: what one base record is for this statement.
    The record id of each relation must pass a base column through and tie every protected table
    it reads to it (sql/rowwise.py), and one base table has one record id column."""
    out: dict[str, str] = {}
    for rel, col in ids:
        if rel is None or col is None:
            continue
        keys = rel.keys.get(col)
        if keys is None:
            refuse(f"the record id {rel.columns[col][0]!r} of {rel.label} does not name one base record: "
                   f"{rel.why.get(col) or 'it is not a column of a protected table'}", select)
        for base, column in keys.items():
            if out.setdefault(base, column).lower() != column.lower():
                refuse(f"the statement reads {base} with two record ids ({out[base]} and {column}); one base table "
                       "has one record id", select)
    return out


def _keys_and_unit(options, scope: Scope, A: Rel, R: Rel | None, keys):
    """(unit, record id column in A, in R, (rel, column, 'unit') or None)."""
    unit_col = options.get("privacy_unit_column")
    rid_col = options.get("record_id_column")
    rid = scope.resolve(rid_col, "record_id_column") if rid_col is not None else None
    if keys is not None:
        (ka_rel, ka), (kr_rel, kr) = keys
        if ka_rel is not A:
            (ka_rel, ka), (kr_rel, kr) = (kr_rel, kr), (ka_rel, ka)
        if rid is not None and rid not in ((A, ka), (R, kr)):
            refuse("record_id_column must be the join key (the join names the record id)",
                   options.nodes["record_id_column"])
        key_cols: tuple[tuple[Rel | None, str | None], ...] = ((A, ka), (R, kr))
    else:
        ka = kr = None
        if rid is not None and rid[0] is not A:
            refuse("record_id_column must be a column of the relation", options.nodes["record_id_column"])
        ka = rid[1] if rid is not None else None
        key_cols = ((A, ka),) if ka else ()
    if unit_col is None:
        if ka is None:
            refuse("name the record id: join a records relation USING (key), or give record_id_column = <column> "
                   "(or privacy_unit_column = <record id column> for record level)", options.nodes.get("epsilon"))
        return "record", ka, kr, None
    unit = scope.resolve(unit_col, "privacy_unit_column")
    node = options.nodes["privacy_unit_column"]
    if unit in key_cols:
        return "record", ka, kr, None
    if keys is None and ka is None:   # one relation, no record id: the unit column is the record id
        return "record", unit[1], None, None
    if R is not None and unit[0] is not R:
        refuse(f"privacy_unit_column = {unit_col.sql()}: with a join the unit is a column of the joined records "
               f"relation ({R.label}), which gives each record its user", node)
    return "user", ka, kr, (unit[0], unit[1], "privacy unit")


def _filters(select: exp.Select, scope: Scope, R: Rel | None, check_nodes):
    from dpspin_sql.sql.totality import unqualified

    where = select.args.get("where")
    if where is None:
        return None, None, None
    check_nodes(where)   # subqueries, windows, aggregates, parameters: the store audit's reasons
    predicate = where.this.copy()
    original: dict[str, str] = {}
    types: dict[str, str] = {}
    roles: dict[str, str] = {}
    for column in list(predicate.find_all(exp.Column)):
        rel, name = scope.resolve(column, "WHERE")
        kind = _FILTER_TYPE.get(rel.kind(name))
        if kind is None:
            refuse(f"column {column.sql()} is {rel.columns[name][1]}; a filter reads numbers, text, BOOLEAN, DATE "
                   "or JSON columns", column)
        private = rel.used.setdefault(name, f"f{rel.letter}{len(rel.used)}")
        original[private] = f"{rel.qualifier}.{rel.columns[name][0]}"
        types[private] = kind
        roles[private] = RECORDS if rel is R else ASSIGNMENTS
        column.set("table", None)
        column.set("this", exp.to_identifier(private))
    try:
        check_predicate(predicate, lambda c: (roles[c.name], c.name),
                        types={(roles[n], n): k for n, k in types.items()}, names=types)
    except AuditRefusal as refusal:   # say the user's column names, not the private ones
        text = str(refusal)
        for private, name in original.items():
            text = re.sub(rf"\b{private}\b", name, text)
        raise AuditRefusal(text) from None
    on_records, on_assignments = [], []
    for term in predicate.flatten() if isinstance(predicate, exp.And) else [predicate]:
        sides = {roles[c.name] for c in term.find_all(exp.Column)}
        if R is not None and sides <= {RECORDS} and sides:
            on_records.append(unqualified(term))
        elif sides <= {ASSIGNMENTS}:
            on_assignments.append(unqualified(term))
        else:
            refuse("a WHERE term mixes columns of both relations; split it into AND-ed terms that each read one",
                   term)
    conj = (lambda ts: None if not ts else exp.and_(*ts, copy=False) if len(ts) > 1 else ts[0])
    return conj(on_records), conj(on_assignments), tuple(sorted(types.items()))


# -- the sketch source ------------------------------------------------------------------------------

@dataclass(frozen=True)
class ProjectedRelation(Relation):
    """A relation as a fixed projection under the logical names (see the module docstring)."""

    select: exp.Select | None = None
    # a file's columns as the audit read them ((name, DuckDB type), in order): another engine's
    # reader is given these, never a schema inferred from rows
    file_columns: tuple[tuple[str, str], ...] = ()

    def relation(self, extra: dict[str, exp.Expression] | None = None) -> exp.Expression:
        # the default only follows the base's defaulted fields: _projection always sets it
        assert self.select is not None, "a ProjectedRelation is built with its select"
        sel = self.select.copy()
        for name, value in (extra or {}).items():
            sel = sel.select(exp.alias_(value, name), copy=False)
        return sel.subquery()


def _varchar(node: exp.Expr) -> exp.Expr:
    return exp.Cast(this=node, to=exp.DataType.build("VARCHAR"))


# integer types every engine holds exactly as a 64-bit integer (Spark has no unsigned types; it
# reads UINTEGER as BIGINT): ids of these types are compared as the integers they are
NATIVE_KEY_TYPES = frozenset({"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER"})


def _key(*columns: tuple[Rel, str]) -> list[exp.Expr]:
    """One id role (the record id, the unit) as each relation gives it: the columns themselves
    when every one is a native integer (integer equality is the equality of their decimal text,
    and an integer key is cheaper to group and join on every engine: −30% on Spark at 10^7
    rows), else all as VARCHAR (CAST from integers, text or UUID never fails), so that the
    relations' ids always meet in one type."""
    if all(rel.columns[name][1].upper() in NATIVE_KEY_TYPES for rel, name in columns):
        return [rel.col(name) for rel, name in columns]
    return [_varchar(rel.col(name)) for rel, name in columns]


def _projection(cat: Catalog, rel: Rel, roles: dict[str, exp.Expr], unit_col: str | None,
                label_atoms: str | None = None) -> ProjectedRelation:
    items = [exp.alias_(value, name) for name, value in roles.items()]
    for name, private in rel.used.items():
        col = rel.col(name)
        items.append(exp.alias_(exp.Cast(this=col, to=exp.DataType.build("DOUBLE"))
                                if rel.kind(name) in ("int", "float") else col, private))
    assert rel.scan is not None   # a relation of the user's (the store's tables have no scan)
    sel = exp.select(*items).from_(exp.alias_(rel.scan.copy(), "s", table=True))
    store = exp.to_identifier(cat.store, quoted=True)
    if label_atoms is not None:
        atoms = exp.Table(this=exp.to_identifier("atoms"), db=exp.to_identifier("main"), catalog=store.copy())
        sel = sel.join(exp.alias_(atoms, "d", table=True), on=exp.EQ(
            this=exp.column("label", table="d"), expression=rel.col(label_atoms)), join_type="inner")
    if unit_col is not None:   # units that have auxiliary records in the store are not in the sketch
        aux = exp.select("user_id").from_(exp.Table(this=exp.to_identifier("records"), db=exp.to_identifier("main"),
                                                    catalog=store.copy())).where(
            "split = 'aux' AND user_id IS NOT NULL")
        sel = sel.where(exp.Not(this=exp.In(this=_varchar(rel.col(unit_col)), query=aux.subquery())))
    logical = tuple(roles)
    return ProjectedRelation(table=rel.table, path=rel.path, format=rel.format, available=logical, select=sel,
                             file_columns=tuple(rel.columns.values()) if rel.path is not None else ())


def _source(cat: Catalog, unit: str, A: Rel, R: Rel | None, atom: str, weight: str, rid_a: str,
            rid_r: str | None, user, record_key: dict[str, str] | None = None) -> SketchSource:
    kind = A.kind(atom)
    atom_expr = (exp.column("atom_id", table="d") if kind == "text"
                 else exp.TryCast(this=A.col(atom), to=exp.DataType.build("INTEGER")))
    w = A.col(weight)
    weight_expr = (exp.TryCast(this=w, to=exp.DataType.build("DOUBLE")) if A.kind(weight) == "text"
                   else exp.Cast(this=w, to=exp.DataType.build("DOUBLE")))
    ids = _key((A, rid_a), *([(R, rid_r)] if R is not None and rid_r is not None else []))
    a_roles = {"record_id": ids[0], "atom_id": atom_expr, "weight": weight_expr}
    unit_in_a = user is not None and user[0] is A
    if unit_in_a:
        a_roles["user_id"] = _key((A, user[1]))[0]
    assignments = _projection(cat, A, a_roles, user[1] if unit_in_a else None, atom if kind == "text" else None)
    records = None
    if R is not None:
        assert rid_r is not None   # R is the joined relation, and a join names its key
        r_roles = {"record_id": ids[1]}
        if user is not None:
            r_roles["user_id"] = _key((R, user[1]))[0]
        records = _projection(cat, R, r_roles, user[1] if user is not None else None)
    del unit
    details = {}
    if record_key:   # what one base record is, for the ledger: every protected table and its record id
        details["record_key"] = ", ".join(f"{base}.{col}" if ":" not in base else f"{base} ({col})"
                                          for base, col in sorted(record_key.items()))
    if cat.public:
        details["public_tables"] = ", ".join(sorted(f.label for f in cat.public.values()))
    if cat.delta_versions:   # which snapshot of each Delta table was released: a reviewer can read it again
        details["delta_versions"] = ", ".join(f"{path}@v{v}" for path, v in sorted(cat.delta_versions.items()))
    return SketchSource(assignments, records, details_=details)


# -- the engine -------------------------------------------------------------------------------------
