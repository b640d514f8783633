-- Per-row filters: records terms go into the target CTE, assignments terms into cleaned.
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, privacy_unit_column = r.user_id, contribution_bound = 2.5,
    max_atoms_per_record = 5, mechanism = 'private_topL', selection_fraction = 0.3, top = 5)
  DPSPIN_MASS(a.weight) AS mass, a.atom_id
FROM assignments AS a INNER JOIN records AS r USING (record_id)
WHERE lower(r.text) LIKE '%refund%'
  AND r.metadata->>'$.product' IN ('Mortgage', 'Credit card')
  AND a.weight >= 0.05
GROUP BY a.atom_id;
