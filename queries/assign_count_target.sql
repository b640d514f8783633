SELECT count(*) FROM records WHERE split IN ('target', 'excluded');   -- excluded: target records outside the current sample
