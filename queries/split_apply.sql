UPDATE records SET split = p.new_split
FROM split_plan AS p
WHERE records.record_id = p.record_id;
DROP TABLE split_plan;
