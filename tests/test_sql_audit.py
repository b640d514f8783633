"""The SQL audit: every refusal of docs/SQL.md, hostile statements, and safe disguises.

Dense tables of statement → expected message fragment (sqlglot-style). A refusal is an
AuditRefusal (exit 1) whose message names the offending part; an unparseable statement
is BadInput (exit 2).
"""
from __future__ import annotations

import pytest

from dpspin_sql.errors import AuditRefusal, BadInput
from dpspin_sql.sketch.transpile import sketch_sql
from dpspin_sql.sql import audit_statement

OPTS = "epsilon = 1.0, delta = 1e-6, privacy_unit_column = user_id, contribution_bound = 1, mechanism = 'gaussian', top = 10"
DP = f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({OPTS}) "
DP_RECORD = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1.0, mechanism = 'laplace') "
J = "FROM assignments JOIN records USING (record_id)"
EXAMPLE = f"{DP}atom_id, DPSPIN_MASS(weight) {J} WHERE split = 'target' GROUP BY atom_id"


def opts(**changes) -> str:
    """The DP clause with options replaced (None drops one)."""
    base = {"epsilon": "1.0", "delta": "1e-6", "privacy_unit_column": "user_id", "contribution_bound": "1",
            "mechanism": "'gaussian'", "top": "10"}
    base.update(changes)
    body = ", ".join(f"{k} = {v}" for k, v in base.items() if v is not None)
    return f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({body}) atom_id, DPSPIN_MASS(weight) {J} GROUP BY atom_id"


# -- one row per refusal of docs/SQL.md: (statement, fragment of the message) -------------------
REFUSALS = [
    # not a DP statement
    (f"SELECT atom_id, DPSPIN_MASS(weight) {J} GROUP BY atom_id", "no WITH DIFFERENTIAL_PRIVACY"),
    ("DELETE FROM ledger", "only SELECT WITH DIFFERENTIAL_PRIVACY statements"),
    ("DROP TABLE ledger", "only SELECT WITH DIFFERENTIAL_PRIVACY statements"),
    (f"{EXAMPLE}; DELETE FROM ledger", "more than one statement"),
    ("SELECT /*+ parallel(4) */ atom_id FROM assignments", "no WITH DIFFERENTIAL_PRIVACY"),
    # exposing clauses
    (f"{EXAMPLE} ORDER BY atom_id", "ORDER BY exposes"),
    (f"{EXAMPLE} LIMIT 5", "LIMIT exposes"),
    (f"{EXAMPLE} LIMIT 5 OFFSET 2", "LIMIT exposes"),
    (f"{EXAMPLE} HAVING DPSPIN_MASS(weight) > 3", "HAVING exposes"),
    (f"{EXAMPLE} QUALIFY atom_id = 1", "QUALIFY exposes"),
    (f"{DP}DISTINCT atom_id, DPSPIN_MASS(weight) {J} GROUP BY atom_id", "DISTINCT exposes"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) INTO leak {J} GROUP BY atom_id", "SELECT INTO"),
    # projection
    (f"{DP}atom_id, DPSPIN_MASS(weight), text {J} GROUP BY atom_id", "records.text would reach the output"),
    (f"{DP}atom_id, DPSPIN_MASS(weight), user_id {J} GROUP BY atom_id", "records.user_id would reach"),
    (f"{DP}atom_id, DPSPIN_MASS(weight), record_id {J} GROUP BY atom_id", "records.record_id would reach"),
    (f"{DP}* {J} GROUP BY atom_id", "SELECT * would expose rows"),
    (f"{DP}atom_id, DPSPIN_MASS(weight), 42 {J} GROUP BY atom_id", "exposes something other than the released plan"),
    (f"{DP}atom_id + 0, DPSPIN_MASS(weight) {J} GROUP BY atom_id", "exposes something other"),
    (f"{DP}atom_id {J} GROUP BY atom_id", "exactly atom_id and DPSPIN_MASS(weight)"),
    (f"{DP}atom_id, DPSPIN_MASS(weight), DPSPIN_MASS(weight) AS again {J} GROUP BY atom_id", "exactly atom_id and"),
    (f"{DP}atom_id, atom_id, DPSPIN_MASS(weight) {J} GROUP BY atom_id", "exactly atom_id and"),
    (f"{DP}atom_id, ROUND(DPSPIN_MASS(weight)) {J} GROUP BY atom_id", "expression over DPSPIN_MASS"),
    # aggregates
    (f"{DP}atom_id, SUM(weight) {J} GROUP BY atom_id", "aggregate SUM is not the DP mass"),
    (f"{DP}atom_id, COUNT(*) {J} GROUP BY atom_id", "aggregate COUNT is not the DP mass"),
    (f"{DP}atom_id, DPSPIN_MASS(weight * 100) {J} GROUP BY atom_id", "DPSPIN_MASS takes the weight column only"),
    (f"{DP}atom_id, DPSPIN_MASS(length(text)) {J} GROUP BY atom_id", "DPSPIN_MASS takes the weight column only"),
    (f"{DP}atom_id, DPSPIN_MASS(r.record_id) FROM assignments a JOIN records r USING (record_id) GROUP BY atom_id",
     "DPSPIN_MASS takes the assignments' weight column only"),
    (f"{DP}atom_id, DPSPIN_MASS(DISTINCT weight) {J} GROUP BY atom_id", "DPSPIN_MASS takes the weight column only"),
    # windows and subqueries
    (f"{DP}atom_id, DPSPIN_MASS(weight) OVER () {J} GROUP BY atom_id", "window function in the projection"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) {J} WHERE ROW_NUMBER() OVER (ORDER BY weight) = 1 GROUP BY atom_id",
     "window function in WHERE"),
    (f"{DP}atom_id, (SELECT MAX(weight) FROM assignments) {J} GROUP BY atom_id", "subquery in the projection"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) FROM (SELECT * FROM assignments) GROUP BY atom_id", "subquery in FROM"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) {J} WHERE EXISTS (SELECT 1 FROM ledger) GROUP BY atom_id", "subquery in WHERE"),
    (f"WITH t AS (SELECT * FROM records) {DP}atom_id, DPSPIN_MASS(weight) {J} GROUP BY atom_id",
     "common table expression"),
    (f"{EXAMPLE} UNION ALL SELECT text, 1 FROM records", "UNION: a DP statement is one SELECT"),
    (f"{EXAMPLE} EXCEPT SELECT atom_id, 1 FROM atoms", "EXCEPT"),
    # GROUP BY
    (f"{DP}atom_id, DPSPIN_MASS(weight) {J}", "GROUP BY atom_id is required"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) {J} GROUP BY atom_id, user_id", "GROUP BY must be atom_id alone"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) {J} GROUP BY user_id", "GROUP BY must be atom_id alone"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) {J} GROUP BY 1", "GROUP BY must be atom_id alone"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) {J} GROUP BY ROLLUP (atom_id)", "GROUP BY"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) {J} GROUP BY ALL", "GROUP BY"),
    # tables
    (f"{DP}atom_id, DPSPIN_MASS(weight) FROM ledger GROUP BY atom_id", "reads table 'ledger', which is not allowed"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) FROM records GROUP BY atom_id", "FROM must read assignments"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) FROM main.assignments GROUP BY atom_id", "qualified table name"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) FROM read_csv('/etc/passwd') GROUP BY atom_id", "other than a table"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) FROM assignments JOIN atoms USING (atom_id) GROUP BY atom_id",
     "reads table 'atoms', which is not allowed"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) FROM assignments a JOIN records r ON a.record_id = r.record_id "
     "GROUP BY atom_id", "JOIN ... ON"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) FROM assignments LEFT JOIN records USING (record_id) GROUP BY atom_id",
     "LEFT join"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) FROM assignments CROSS JOIN records GROUP BY atom_id", "CROSS join"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) FROM assignments JOIN records USING (user_id) GROUP BY atom_id",
     "USING (record_id) exactly"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) {J} JOIN records r2 USING (record_id) GROUP BY atom_id", "more than one JOIN"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) FROM assignments TABLESAMPLE 10 PERCENT GROUP BY atom_id", "TABLESAMPLE"),
    # WHERE
    (f"{DP}atom_id, DPSPIN_MASS(weight) {J} WHERE random() < 0.5 GROUP BY atom_id", "not on the list of per-row"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) {J} WHERE getenv('HOME') = 'x' GROUP BY atom_id", "not on the list"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) {J} WHERE split = $scale GROUP BY atom_id", "parameters are not allowed"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) {J} WHERE weight > AVG(weight) GROUP BY atom_id", "aggregate AVG in WHERE"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) {J} WHERE user_id = 'u1' OR atom_id = 3 GROUP BY atom_id",
     "mixes records and assignments columns"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) FROM assignments WHERE split = 'target' GROUP BY atom_id",
     "JOIN records USING (record_id) to use it"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) {J} WHERE ledger.epsilon > 0 GROUP BY atom_id", "not a table of this statement"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) {J} WHERE secret = 1 GROUP BY atom_id", "unknown column 'secret'"),
    # privacy unit
    (opts(privacy_unit_column="text"), "privacy_unit_column = text is not a privacy unit"),
    (opts(privacy_unit_column="r.user_id"), "'r' is not a table of this statement"),
    (opts(privacy_unit_column="'user_id'"), "must name a column"),
    (opts(privacy_unit_column=None, contribution_bound="5"), "record level has B = 1"),
    (opts(privacy_unit_column="record_id", contribution_bound="5"), "record level has B = 1"),
    # options
    (opts(epsilon="0"), "epsilon = 0 is out of range"),
    (opts(epsilon="-1"), "epsilon = -1 is out of range"),
    (opts(epsilon="1e400"), "epsilon = inf is out of range"),
    (opts(epsilon="'1'"), "epsilon must be a number"),
    (opts(epsilon=None), "option epsilon is required"),
    (opts(mechanism=None), "option mechanism is required"),
    (opts(mechanism="'magic'"), "'magic' is not one of"),
    (opts(delta="2"), "delta = 2 is out of range"),
    (opts(delta="0"), "delta = 0 is out of range: must lie in (0, 1)"),
    (opts(top="0"), "top = 0 is out of range"),
    (opts(top="2.5"), "top must be an integer"),
    (opts(max_atoms_per_record="0"), "max_atoms_per_record = 0 is out of range"),
    (opts(contribution_bound="-1"), "contribution_bound = -1 is out of range"),
    (opts(contribution_bound="1e-9"), "below the fixed-point resolution"),
    (opts(adjacency="'swap'"), "'swap' is not one of"),
    (opts(selection_fraction="0.3"), "selection_fraction = 0.3 is out of range: applies to private_topL only"),
    (opts(mechanism="'private_topL'", selection_fraction="1.5"), "selection_fraction = 1.5 is out of range"),
    (opts(calibration="'classical'"), "classical Gaussian calibration is valid only for epsilon < 1"),
    (opts(noise_seed="7"), "unknown option 'noise_seed'"),
    (opts(epsilon="1") .replace("top = 10", "top = 10, top = 3"), "option 'top' is given twice"),
]

# -- filters that could fail on some record (totality, sql/totality.py): one row per rule ------------
W = f"{DP}atom_id, DPSPIN_MASS(weight) {J} WHERE {{}} GROUP BY atom_id"
TOTALITY = [
    ("text = 5", "= compares INTEGER with VARCHAR"),                    # casts every text to a number
    ("weight = 'NaN'", "= compares DOUBLE with VARCHAR"),
    ("atom_id = TRUE", "compares BOOLEAN with INTEGER"),
    ("user_id IN ('a', 3)", "IN compares INTEGER with VARCHAR"),
    ("length(text) BETWEEN 'a' AND 'b'", "BETWEEN compares INTEGER with VARCHAR"),
    ("coalesce(user_id, 5) = 'x'", "COALESCE mixes INTEGER with VARCHAR"),
    ("text", "the WHERE filter is VARCHAR, not a condition"),
    ("NOT user_id", "the operand of NOT is VARCHAR"),
    ("text IS TRUE", "the operand of IS TRUE/FALSE is VARCHAR"),
    ("text AND TRUE", "an operand of AND is VARCHAR"),
    ("lower(atom_id) = 'x'", "LOWER takes text, not INTEGER"),
    ("weight + text > 1", "+ takes numbers, not VARCHAR"),
    ("metadata = '{}'", "JSON is not comparable"),
    ("TRY_CAST(metadata AS VARCHAR) = 'x'", "TRY_CAST of a JSON value"),
    ("TRY_CAST(text AS DECIMAL(3, 1)) > 1", "TRY_CAST to DECIMAL(3, 1) is not allowed"),
    ("TRY_CAST(text AS TIMESTAMP) IS NULL", "TRY_CAST to TIMESTAMP"),
    ("TRY_CAST(TRY_CAST(text AS DATE) AS INTEGER) > 1", "TRY_CAST from DATE to INTEGER"),
    ("CAST(text AS INTEGER) > 1", "use TRY_CAST"),
    ("atom_id // 2 = 1", "INTDIV is not on the list"),                  # raises on a zero divisor even in DOUBLE
    ("atom_id > 1e400", "outside ±[1e-300, 1e300]"),
    ("weight > 1e-400", "outside ±[1e-300, 1e300]"),
    ("atom_id = 9007199254740993", "above 2^53"),
    ("text LIKE 'a%' ESCAPE 'ab'", "an escape must be exactly one ASCII character"),   # the ESCAPE
    ("text LIKE 'a%' ESCAPE '%'", "an escape must be exactly one ASCII character other than % and _"),
    ("text LIKE 'a%' ESCAPE 'é'", "exactly one ASCII character"),
    ("text LIKE 'abc!' ESCAPE '!'", "ends with its escape character"),
    ("text LIKE 'a!b' ESCAPE '!'", "may precede only %, _ or itself"),
    ("text LIKE user_id", "the pattern of LIKE must be a string literal"),
    ("text LIKE ANY ('a%', 'b%')", "must be a string literal"),
    (f"text LIKE '{'x' * 257}'", "more than 256"),
    ("regexp_matches(text, '(')", "raises in DuckDB on sample values"),
    ("regexp_matches(text, '((a{1000}){1000}){1000}')", "counted repetition"),
    ("regexp_matches(text, '[a-z ]*e[a-z ]{20}x')", "counted repetition"),
    ("regexp_matches(text, '" + "a" * 65 + "')", "more than 64"),
    (" AND ".join(f"regexp_matches(text, 'a{i}')" for i in range(5)).replace("a{", "a"), "more than 4 regexp_matches"),
    ("regexp_matches(text, 'a', 'z')", "regexp_matches options"),
    ("regexp_matches(text, 'a', user_id)", "regexp_matches options"),
    ("substring(text, 1, length(text)) = 'a'", "the length of SUBSTRING must be an integer literal"),
    ("substring(text, 4294967296, 1) = 'a'", "the start of SUBSTRING must be an integer literal"),
    ("substring(text, 1, -1) = 'a'", "the length of SUBSTRING"),
    ("trim(text, user_id) = 'a'", "the characters TRIM removes must be a string literal"),
    ("concat(text, 'a') = 'b'", "builds a string from a record's value"),
    ("text || text LIKE '%a%'", "builds a string from a record's value"),
    ("metadata ->> user_id = 'x'", "the JSON path must be a string literal"),
    ("metadata ->> '$.*' = 'x'", "not wildcards"),
    ("metadata ->> '$[#-1]' = 'x'", "is not of the form"),
    ("metadata ->> '$.a\\b' = 'x'", "has quotes, backslashes"),
    ("metadata ->> '$[99999999999]' = 'x'", "a JSON array index must be in"),
    ("text ->> '$.a' = 'x'", "JSON extraction from VARCHAR"),
    ("text COLLATE NOCASE = 'a'", "COLLATE is not on the list"),
    ("CASE WHEN text = 'a' THEN TRUE END", "CASE is not on the list"),
    ("text SIMILAR TO 'a'", "SIMILARTO is not on the list"),
    ("text GLOB 'a*'", "GLOB is not on the list"),
    ("user_id IN (" + ", ".join(["'u'"] * 1001) + ")", "an IN list of 1001 items"),
    (" OR ".join(f"text LIKE '%{i}%'" for i in range(17)), "more than 16 LIKE/ILIKE/regexp_matches"),
    ("NOT " * 40 + "TRUE", "nested more than 32 levels deep"),
    (" + ".join(["weight"] * 40) + " > 0", "nested more than 32 levels deep"),
    ("text BETWEEN SYMMETRIC 'a' AND 'b'", "BETWEEN with symmetric"),
]
TOTAL = [   # accepted: each is total on every row (docs/THREAT_MODEL.md)
    "text ILIKE '%refund%' AND user_id IN ('u1', 'u2') AND record_id LIKE 'r1\\_%' ESCAPE '\\'",
    "text NOT LIKE '%50!%%' ESCAPE '!' AND text LIKE '%a_b%c'",
    "regexp_matches(text, '(?i)refund|charge', 'i') AND starts_with(lower(trim(text)), 'my')",
    "atom_id * 2147483647 * 2147483647 > 0 AND abs(-2147483647 - atom_id) > 0 AND weight / 0 IS NULL",
    "atom_id % 0 IS NULL AND -atom_id < 1 AND weight BETWEEN 0.1 AND 0.5 AND atom_id IN (1, 2, 3)",
    "length(text) > 1.2345678901234567890123456789012345678 AND substring(text, -5, 3) <> 'abc'",
    "TRY_CAST(metadata ->> '$.rating' AS DOUBLE) >= 4 AND metadata ->> '$.\"Sub issue\"' IS NOT NULL",
    "metadata -> '$.a[2]' ->> '$.b' = 'x' AND metadata -> '$.a' IS NULL",
    "TRY_CAST(text AS DATE) > TRY_CAST('2020-01-01' AS DATE) AND TRY_CAST(text AS BOOLEAN) IS NULL",
    "coalesce(TRY_CAST(text AS INTEGER), 0.5) > 1 AND coalesce(user_id, '') <> ''",
    "(text = 'a') IS NOT DISTINCT FROM TRUE AND user_id IS DISTINCT FROM record_id",
    "'a' || 'b' <> text AND NULL IS NULL",
    " OR ".join(f"length(text) = {i}" for i in range(80)),             # a long OR chain is one level
]


@pytest.mark.parametrize("where, fragment", TOTALITY)
def test_filters_that_could_fail_on_some_record_are_refused(where: str, fragment: str):
    with pytest.raises(AuditRefusal) as info:
        audit_statement(W.format(where))
    message = str(info.value)
    assert fragment.lower() in message.lower(), message
    assert message.startswith("SQL audit refused: ") and "\n" not in message


@pytest.mark.parametrize("where", TOTAL)
def test_total_filters_are_accepted(where: str):
    audited = audit_statement(W.format(where))
    assert audited.records_filter is not None or audited.assignments_filter is not None


# -- at least 20 hostile statements (every one must be refused) --------------------------------
HOSTILE = [
    # raw text in the output, plainly and in disguise
    (f"{DP}text AS atom_id, DPSPIN_MASS(weight) {J} GROUP BY atom_id", "records.text would reach"),
    (f"{DP}atom_id, DPSPIN_MASS(weight), MAX(text) {J} GROUP BY atom_id", "aggregate MAX"),
    (f"{DP}atom_id, DPSPIN_MASS(weight), string_agg(text, ',') {J} GROUP BY atom_id", "aggregate"),
    # LIMIT 1 tricks
    (f"{EXAMPLE} ORDER BY DPSPIN_MASS(weight) DESC LIMIT 1", "exposes"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) FROM (SELECT * FROM assignments LIMIT 1) AS assignments GROUP BY atom_id",
     "subquery in FROM"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) {J} WHERE record_id = (SELECT record_id FROM records LIMIT 1) "
     "GROUP BY atom_id", "subquery in WHERE"),
    # subqueries that smuggle a user's weight
    (f"{DP}atom_id, DPSPIN_MASS(weight * (SELECT COUNT(*) FROM records WHERE user_id = 'alice')) {J} "
     "GROUP BY atom_id", "DPSPIN_MASS takes the weight column only"),
    (f"{DP}atom_id, DPSPIN_MASS(CASE WHEN user_id = 'alice' THEN 1000 ELSE weight END) {J} GROUP BY atom_id",
     "DPSPIN_MASS takes the weight column only"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) + (SELECT weight FROM assignments WHERE record_id = 'r1') {J} "
     "GROUP BY atom_id", "subquery in the projection"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) {J} WHERE weight IN (SELECT weight FROM assignments) GROUP BY atom_id",
     "subquery in WHERE"),
    # unions
    (f"{EXAMPLE} UNION SELECT user_id, 0 FROM records", "UNION"),
    (f"SELECT text, 1 FROM records UNION ALL {EXAMPLE}", "UNION"),
    # window functions
    (f"{DP}atom_id, DPSPIN_MASS(weight) OVER (PARTITION BY atom_id) {J} GROUP BY atom_id", "window function"),
    (f"{DP}atom_id, DPSPIN_MASS(weight), SUM(weight) OVER () {J} GROUP BY atom_id", "window function"),
    # comments
    (f"{DP}atom_id, DPSPIN_MASS(weight) /* harmless */, text -- only a comment\n {J} GROUP BY atom_id",
     "records.text would reach"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) {J} GROUP BY atom_id -- ;\n; SELECT text FROM records",
     "more than one statement"),
    # mixed case
    (f"sElEcT wItH differential_privacy oPtIoNs ({OPTS}) ATOM_ID, Dpspin_Mass(WEIGHT), TeXt "
     "FrOm ASSIGNMENTS jOiN RECORDS uSiNg (RECORD_ID) gRoUp By Atom_Id", "records.text would reach"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) FROM LEDGER GROUP BY atom_id", "reads table 'LEDGER'"),
    # quoted identifiers
    (f'{DP}atom_id, DPSPIN_MASS(weight), "text" {J} GROUP BY atom_id', "records.text would reach"),
    (f'{DP}atom_id, DPSPIN_MASS(weight), "Records"."TEXT" {J} GROUP BY atom_id', "records.text would reach"),
    (f'{DP}atom_id, DPSPIN_MASS(weight) FROM "assignments; DROP TABLE ledger" GROUP BY atom_id', "not allowed"),
    (f'{DP}"atom_id" AS "x", DPSPIN_MASS("weight") FROM "ledger" GROUP BY "atom_id"', "reads table 'ledger'"),
    # other exfiltration routes
    (f"{DP}atom_id, DPSPIN_MASS(weight) {J} GROUP BY atom_id HAVING COUNT(*) = 1", "HAVING exposes"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) {J} JOIN ledger USING (record_id) GROUP BY atom_id", "more than one JOIN"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) FROM assignments JOIN assignments b USING (record_id) GROUP BY atom_id",
     "JOIN must read records"),
    (opts(privacy_unit_column="record_id", contribution_bound="1000"), "record level has B = 1"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) FROM assignments, records GROUP BY atom_id", "join"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) {J} WHERE text LIKE (SELECT text FROM records LIMIT 1) GROUP BY atom_id",
     "subquery in WHERE"),
    (f"{DP}atom_id, DPSPIN_MASS(weight) FROM assignments, UNNEST([1, 2]) GROUP BY atom_id", "join"),
    (f"INSERT INTO ledger {EXAMPLE}", "only SELECT"),
]


@pytest.mark.parametrize("sql, fragment", REFUSALS + HOSTILE)
def test_refused(sql: str, fragment: str):
    with pytest.raises(AuditRefusal) as info:
        audit_statement(sql)
    message = str(info.value)
    assert fragment.lower() in message.lower(), message
    assert message.startswith("SQL audit refused: ")
    assert "\n" not in message


def test_enough_hostile_statements():
    assert len(HOSTILE) >= 20


@pytest.mark.parametrize("sql, where", [
    (f"{DP}atom_id, DPSPIN_MASS(weight), text {J} GROUP BY atom_id", "col 191: text]"),
    (f"{EXAMPLE}\nLIMIT 1", "line 2, col 7: LIMIT 1]"),
    (f"{DP}atom_id,\n  SUM(weight)\n{J} GROUP BY atom_id", "line 2, col 3: SUM(weight)]"),
    (opts(epsilon="-1"), "epsilon=-1]"),
])
def test_refusal_points_at_the_offending_part(sql: str, where: str):
    with pytest.raises(AuditRefusal, match=None) as info:
        audit_statement(sql)
    assert str(info.value).endswith(where), str(info.value)


@pytest.mark.parametrize("sql", [
    "",
    "   ;  ",
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon) atom_id FROM assignments",
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS () atom_id FROM assignments",
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1 atom_id FROM assignments",
    "SELECT atom_id FROM 'unterminated",
    "SELEC atom_id",
    "SELECT atom_id FROM assignments WHERE (",
])
def test_unparseable_is_bad_input(sql: str):
    with pytest.raises(BadInput):
        audit_statement(sql)


# -- disguises that are safe: accepted, and rewritten to exactly the canonical sketch -----------
CANONICAL = f"{DP}atom_id, DPSPIN_MASS(weight) {J} WHERE split = 'target' GROUP BY atom_id"
SAME = [
    CANONICAL + ";",
    f"{DP}DPSPIN_MASS(weight) AS mass, atom_id AS atom {J} WHERE split = 'target' GROUP BY atom_id",
    f"{DP}a.atom_id, DPSPIN_MASS(a.weight) FROM assignments AS a INNER JOIN records AS r USING (record_id) "
    "WHERE r.split = 'target' GROUP BY a.atom_id",
    f'{DP}"atom_id", dpspin_mass("WEIGHT") FROM "Assignments" JOIN "RECORDS" USING ("record_id") '
    "WHERE \"Split\" = 'target' GROUP BY \"ATOM_ID\"",
    f"select with differential_privacy options ({OPTS}) ATOM_ID, dpspin_mass(Weight) from assignments join "
    "records using (record_id) where SPLIT = 'target' group by atom_id",
    f"-- a leading comment\n{DP}atom_id /* the atom */, DPSPIN_MASS(weight) {J}\n"
    "WHERE split = 'target' -- */ UNION SELECT text FROM records\nGROUP BY atom_id",
    CANONICAL.replace("OPTIONS (", "("),
]


@pytest.mark.parametrize("sql", SAME)
def test_safe_disguises_rewrite_to_the_canonical_sketch(sql: str):
    canonical, audited = audit_statement(CANONICAL), audit_statement(sql)
    expected = sketch_sql(canonical.request.bounds, canonical.filters, "duckdb")
    got = sketch_sql(audited.request.bounds, audited.filters, "duckdb")
    assert got == expected
    # nothing of the disguise reaches the query: no UNION beyond the template's own (the
    # record vectors of the fast and the enforced paths), and no text column
    plain = sketch_sql(canonical.request.bounds, None, "duckdb")
    assert got.count("UNION") == plain.count("UNION") and "UNION SELECT" not in got.replace("\n", " ")
    assert "text" not in got.replace("'target'", "")


@pytest.mark.parametrize("sql, unit, K, B", [
    (EXAMPLE, "user", 3, 1.0),
    (EXAMPLE.replace("privacy_unit_column = user_id, contribution_bound = 1, ", ""), "record", 3, 1.0),
    (opts(privacy_unit_column="records.user_id", contribution_bound="2.5", max_atoms_per_record="5"), "user", 5, 2.5),
    (opts(privacy_unit_column="record_id", contribution_bound=None), "record", 3, 1.0),
    (opts(privacy_unit_column="\"USER_ID\""), "user", 3, 1.0),
    (f"{DP_RECORD}atom_id, DPSPIN_MASS(weight) FROM assignments GROUP BY atom_id", "record", 3, 1.0),
])
def test_privacy_unit_and_bounds(sql, unit, K, B):
    audited = audit_statement(sql)
    assert (audited.unit, audited.request.K, audited.request.B) == (unit, K, B)


@pytest.mark.parametrize("where, on_records, on_assignments", [
    ("split = 'target'", "split = 'target'", None),
    ("r.split = 'target' AND a.weight > 0.5", "split = 'target'", "weight > 0.5"),
    ("text ILIKE '%refund%' AND user_id IN ('u1', 'u2')", "text ILIKE '%refund%' AND user_id IN ('u1', 'u2')", None),
    ("atom_id IN (1, 2, 3) AND NOT (weight < 0.1)", None, "atom_id IN (1, 2, 3) AND NOT (weight < 0.1)"),
    ("metadata->>'$.product' = 'Mortgage'", "(metadata ->> '$.product') = 'Mortgage'", None),
    ("record_id LIKE 'r1%'", "record_id LIKE 'r1%'", None),
    ("length(lower(trim(text))) BETWEEN 10 AND 500", "LENGTH(LOWER(TRIM(text))) BETWEEN 10 AND 500", None),
    ("coalesce(user_id, '') <> '' AND split IS NOT NULL", "COALESCE(user_id, '') <> '' AND NOT split IS NULL",
     None),
])
def test_where_terms_go_to_their_table(where, on_records, on_assignments):
    sql = (f"{DP}atom_id, DPSPIN_MASS(weight) FROM assignments a JOIN records r USING (record_id) "
           f"WHERE {where} GROUP BY atom_id")
    audited = audit_statement(sql)
    got = (audited.records_filter.sql("duckdb") if audited.records_filter is not None else None,
           audited.assignments_filter.sql("duckdb") if audited.assignments_filter is not None else None)
    assert got == (on_records, on_assignments)
