-- The fitted scorer travels with the dictionary it was fitted for, so the same map
-- can be applied again (or shipped to a Spark cluster) without refitting.
UPDATE dictionary SET scorer = $scorer WHERE dictionary_id = $dictionary_id;
