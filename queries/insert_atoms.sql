-- Install a public dictionary (replaces the previous one; assignments refer to atom ids).
INSERT INTO atoms (atom_id, label, description, aux_support, dictionary_id)
SELECT CAST(atom_id AS INTEGER), CAST(label AS VARCHAR), CAST(description AS VARCHAR),
       CAST(aux_support AS DOUBLE), $dictionary_id
FROM staging_atoms
ORDER BY atom_id;
