WITH target AS (
  SELECT
    record_id
  FROM (
    SELECT
      s.post_id AS record_id,
      CAST(s.stars AS DOUBLE) AS fr0,
      'target' AS split
    FROM shop.posts AS s
  ) AS records
  WHERE
    split = 'target' AND fr0 >= CAST(2 AS DOUBLE)
), cleaned AS (
  SELECT
    t.record_id,
    a.atom_id,
    CASE
      WHEN (
        a.weight >= -1.7976931348623157e308 AND a.weight <= 1.7976931348623157e308
      )
      AND a.weight > 0
      THEN CAST(FLOOR(LEAST(a.weight, 1.0) * 16777216) AS BIGINT)
    END AS w
  FROM (
    SELECT
      s.post_id AS record_id,
      CASE
        WHEN s.topic >= -2147483648 AND s.topic <= 2147483647
        THEN CAST(s.topic AS INTEGER)
      END AS atom_id,
      CAST(s.w AS DOUBLE) AS weight,
      CAST(s.w AS DOUBLE) AS fa0
    FROM post_topics AS s
  ) AS a
  JOIN target AS t
    ON t.record_id = a.record_id
  JOIN atoms AS d
    ON d.atom_id = a.atom_id
  WHERE
    a.fa0 > CAST(0.05 AS DOUBLE)
), positive AS (
  SELECT
    record_id,
    atom_id,
    w
  FROM cleaned
  WHERE
    w > 0
), per_record AS (
  SELECT
    record_id,
    COUNT(*) AS n,
    SUM(w) AS total,
    MIN(atom_id) AS lo,
    MAX(atom_id) AS hi,
    SUM(atom_id) AS atom_sum
  FROM positive
  GROUP BY
    record_id
), irregular AS (
  SELECT
    record_id
  FROM per_record
  WHERE
    NOT (
      n <= 3
      AND total <= 16777216
      AND (
        n = 1
        OR (
          n = 2 AND lo < hi
        )
        OR (
          n = 3 AND lo < atom_sum - lo - hi AND atom_sum - lo - hi < hi
        )
      )
    )
), deduplicated AS (
  SELECT
    p.record_id,
    p.atom_id,
    MAX(p.w) AS w
  FROM positive AS p
  JOIN irregular AS i
    ON i.record_id = p.record_id
  GROUP BY
    p.record_id,
    p.atom_id
), ranked AS (
  SELECT
    record_id,
    atom_id,
    w,
    ROW_NUMBER() OVER (PARTITION BY record_id ORDER BY w DESC, atom_id ASC) AS k
  FROM deduplicated
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
    p.record_id,
    p.atom_id,
    p.w AS v
  FROM positive AS p
  LEFT JOIN irregular AS i
    ON i.record_id = p.record_id
  WHERE
    i.record_id IS NULL
  UNION ALL
  SELECT
    record_id,
    atom_id,
    CASE
      WHEN total <= 16777216
      THEN w
      WHEN w <= CAST((
        (
          9223372036854775807
        ) - (
          (
            9223372036854775807
          ) % 16777216
        )
      ) / 16777216 AS DECIMAL(38, 0))
      THEN CAST((
        (
          (
            w * 16777216
          )
        ) - (
          (
            (
              w * 16777216
            )
          ) % total
        )
      ) / total AS DECIMAL(38, 0))
      ELSE CAST(CAST((
        (
          (
            CAST(w AS DECIMAL(38, 0)) * 16777216
          )
        ) - (
          (
            (
              CAST(w AS DECIMAL(38, 0)) * 16777216
            )
          ) % total
        )
      ) / total AS DECIMAL(38, 0)) AS BIGINT)
    END AS v
  FROM kept
), sketch_mass AS (
  SELECT
    atom_id,
    CAST(SUM(v) AS DECIMAL(38, 0)) AS mass
  FROM record_vectors
  GROUP BY
    atom_id
)
SELECT
  d.atom_id,
  CAST(COALESCE(s.mass, 0) AS DECIMAL(38, 0)) AS mass
FROM atoms AS d
LEFT JOIN sketch_mass AS s
  ON s.atom_id = d.atom_id
ORDER BY
  d.atom_id;
