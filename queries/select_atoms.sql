SELECT atom_id, label, description, aux_support FROM atoms ORDER BY atom_id;
