-- dpspin_unit_hash(id, seed): a stable 64-bit hash of a protected unit's id under a
-- public seed. Splits and samples are decided by it, so they are reproducible and do
-- not depend on row order.
CREATE OR REPLACE MACRO dpspin_unit_hash(id, seed) AS
    hash(CAST(seed AS VARCHAR) || ':' || CAST(id AS VARCHAR));

-- dpspin_fix(w, scale): a weight as a non-negative fixed-point integer, capped at one
-- unit of mass; NULL for anything that is not a finite positive number.
CREATE OR REPLACE MACRO dpspin_fix(w, scale) AS
    CASE WHEN isfinite(w) AND w > 0 THEN CAST(FLOOR(LEAST(w, 1.0) * scale) AS BIGINT) END;

-- dpspin_clip(u, total, bound): one coordinate of an L1 clip in integers; the clipped
-- coordinates of one vector sum to at most `bound`. The product stays in BIGINT when it
-- provably fits (u ≤ 2^63-1 // bound) and goes through HUGEINT only when it might not.
CREATE OR REPLACE MACRO dpspin_clip(u, total, bound) AS
    CASE WHEN total <= bound THEN u
         WHEN u <= 9223372036854775807 // bound THEN (u * bound) // total
         ELSE CAST((CAST(u AS HUGEINT) * bound) // total AS BIGINT) END;
