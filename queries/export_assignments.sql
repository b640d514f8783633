SELECT record_id, atom_id, weight FROM assignment_rows;
