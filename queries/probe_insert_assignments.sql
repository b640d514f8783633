-- Probe-atom experiment: add the registered assignments of the probe records.
INSERT INTO assignments SELECT record_id, atom_id, weight FROM probe_assignments;
