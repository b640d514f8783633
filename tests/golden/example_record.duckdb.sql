WITH target AS (
  SELECT
    record_id
  FROM records
  WHERE
    split = 'target' AND split = 'target'
), cleaned AS (
  SELECT
    a.record_id,
    a.atom_id,
    MAX(
      CASE
        WHEN ISFINITE(a.weight) AND a.weight > 0
        THEN CAST(FLOOR(LEAST(a.weight, 1.0) * 16777216) AS BIGINT)
      END
    ) AS w
  FROM assignments AS a
  JOIN target AS t
    ON t.record_id = a.record_id
  JOIN atoms AS d
    ON d.atom_id = a.atom_id
  GROUP BY
    a.record_id,
    a.atom_id
), ranked AS (
  SELECT
    record_id,
    atom_id,
    w,
    ROW_NUMBER() OVER (PARTITION BY record_id ORDER BY w DESC, atom_id ASC) AS k
  FROM cleaned
  WHERE
    w > 0
), kept AS (
  SELECT
    record_id,
    atom_id,
    w,
    CAST(SUM(w) OVER (PARTITION BY record_id) AS BIGINT) AS total
  FROM ranked
  WHERE
    k <= 3
), record_vectors AS (
  SELECT
    record_id,
    atom_id,
    CASE
      WHEN total <= 16777216
      THEN w
      WHEN w <= 9223372036854775807 // 16777216
      THEN (
        w * 16777216
      ) // total
      ELSE CAST((
        CAST(w AS INT128) * 16777216
      ) // total AS BIGINT)
    END AS v
  FROM kept
), sketch_mass AS (
  SELECT
    atom_id,
    CAST(SUM(v) AS INT128) AS mass
  FROM record_vectors
  GROUP BY
    atom_id
)
SELECT
  d.atom_id,
  CAST(COALESCE(s.mass, 0) AS INT128) AS mass
FROM atoms AS d
LEFT JOIN sketch_mass AS s
  ON s.atom_id = d.atom_id
ORDER BY
  d.atom_id;
