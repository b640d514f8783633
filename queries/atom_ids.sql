SELECT atom_id FROM atoms ORDER BY atom_id;
