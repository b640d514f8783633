-- When the saved scorer last wrote the assignments ($step) and when assignments were last
-- written at all: the scorer's are the current ones unless rows were loaded after it.
SELECT step, done_at FROM pipeline WHERE step IN ('assignments', $step);
