COPY assignments (record_id, atom_id, weight) FROM STDIN
