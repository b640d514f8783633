-- The issue's example: user level, B = 1, Gaussian, top 10.
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1.0, delta = 1e-6, privacy_unit_column = user_id,
    contribution_bound = 1, mechanism = 'gaussian', top = 10)
  atom_id, DPSPIN_MASS(weight)
FROM assignments JOIN records USING (record_id)
WHERE split = 'target'
GROUP BY atom_id;
