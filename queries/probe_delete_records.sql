-- Probe-atom experiment: remove the probe records ($p: the probe id prefix) after the sketch.
DELETE FROM records WHERE starts_with(record_id, $p);
