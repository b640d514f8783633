-- Probe-atom experiment: remove the probe records' assignments ($p: the probe id prefix).
DELETE FROM assignments WHERE starts_with(record_id, $p);
