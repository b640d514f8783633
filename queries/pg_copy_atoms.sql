COPY atoms (atom_id, label, description) FROM STDIN
