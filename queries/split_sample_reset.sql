-- Every non-aux record is back in the target split before a new sample is drawn.
UPDATE records SET split = 'target' WHERE split = 'excluded';
