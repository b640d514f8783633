-- The same without privacy_unit_column: record level.
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1.0, delta = 1e-6, mechanism = 'gaussian', top = 10)
  atom_id, DPSPIN_MASS(weight)
FROM assignments JOIN records USING (record_id)
WHERE split = 'target'
GROUP BY atom_id;
