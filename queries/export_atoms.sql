SELECT atom_id, label, description FROM atoms;
