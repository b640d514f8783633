SELECT count(*) FROM split_plan WHERE (old_split = 'aux') <> (new_split = 'aux');
