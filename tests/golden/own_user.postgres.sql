WITH target AS (
  SELECT
    record_id,
    user_id
  FROM (
    SELECT
      s.review_id AS record_id,
      CAST(s.author AS VARCHAR) AS user_id,
      'target' AS split
    FROM reviews AS s
    WHERE
      NOT CAST(s.author AS VARCHAR) IN (
        SELECT
          user_id
        FROM records
        WHERE
          split = 'aux' AND NOT user_id IS NULL
      )
  ) AS records
  WHERE
    split = 'target'
), cleaned AS (
  SELECT
    t.record_id,
    t.user_id,
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
      s.review_id AS record_id,
      d.atom_id AS atom_id,
      CAST(s.score AS DOUBLE PRECISION) AS weight,
      CAST(s.score AS DOUBLE PRECISION) AS fa0
    FROM theme_scores AS s
    INNER JOIN atoms AS d
      ON d.label = s.theme
  ) AS a
  JOIN target AS t
    ON t.record_id = a.record_id
  JOIN atoms AS d
    ON d.atom_id = a.atom_id
  WHERE
    a.fa0 > CAST(0.1 AS DOUBLE PRECISION)
), positive AS (
  SELECT
    record_id,
    user_id,
    atom_id,
    w
  FROM cleaned
  WHERE
    w > 0 AND NOT user_id IS NULL
), per_record AS (
  SELECT
    user_id,
    record_id,
    COUNT(*) AS n,
    SUM(w) AS total,
    MIN(atom_id) AS lo,
    MAX(atom_id) AS hi,
    SUM(atom_id) AS atom_sum
  FROM positive
  GROUP BY
    user_id,
    record_id
), irregular AS (
  SELECT
    user_id,
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
    p.user_id,
    p.atom_id,
    MAX(p.w) AS w
  FROM positive AS p
  JOIN irregular AS i
    ON i.record_id = p.record_id AND i.user_id = p.user_id
  GROUP BY
    p.record_id,
    p.user_id,
    p.atom_id
), ranked AS (
  SELECT
    record_id,
    user_id,
    atom_id,
    w,
    ROW_NUMBER() OVER (PARTITION BY user_id, record_id ORDER BY w DESC NULLS LAST, atom_id ASC) AS k
  FROM deduplicated
), kept AS (
  SELECT
    record_id,
    user_id,
    atom_id,
    w,
    CAST(SUM(w) OVER (PARTITION BY user_id, record_id) AS BIGINT) AS total
  FROM ranked
  WHERE
    k <= 3
), record_vectors AS (
  SELECT
    p.record_id,
    p.user_id,
    p.atom_id,
    p.w AS v
  FROM positive AS p
  LEFT JOIN irregular AS i
    ON i.record_id = p.record_id AND i.user_id = p.user_id
  WHERE
    i.record_id IS NULL
  UNION ALL
  SELECT
    record_id,
    user_id,
    atom_id,
    CASE
      WHEN total <= 16777216
      THEN w
      WHEN w <= DIV(9223372036854775807, 16777216)
      THEN DIV((
        w * 16777216
      ), total)
      ELSE CAST(DIV((
        CAST(w AS DECIMAL(38, 0)) * 16777216
      ), total) AS BIGINT)
    END AS v
  FROM kept
), user_vectors AS (
  SELECT
    user_id,
    atom_id,
    CAST(SUM(v) AS BIGINT) AS u
  FROM record_vectors
  GROUP BY
    user_id,
    atom_id
), user_sums AS (
  SELECT
    user_id,
    CAST(SUM(u) AS BIGINT) AS total
  FROM user_vectors
  GROUP BY
    user_id
), user_totals AS (
  SELECT
    uv.user_id,
    uv.atom_id,
    uv.u,
    us.total
  FROM user_vectors AS uv
  JOIN user_sums AS us
    ON us.user_id = uv.user_id
), sketch_mass AS (
  SELECT
    atom_id,
    CAST(SUM(
      CASE
        WHEN total <= 16777216
        THEN u
        WHEN u <= DIV(9223372036854775807, 16777216)
        THEN DIV((
          u * 16777216
        ), total)
        ELSE CAST(DIV((
          CAST(u AS DECIMAL(38, 0)) * 16777216
        ), total) AS BIGINT)
      END
    ) AS DECIMAL(38, 0)) AS mass
  FROM user_totals
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
