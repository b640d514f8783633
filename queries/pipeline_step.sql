-- Did the step run for the current dictionary?
SELECT count(*) > 0 FROM pipeline AS p
WHERE p.step = $step AND p.dictionary_id IS NOT DISTINCT FROM (SELECT max(dictionary_id) FROM dictionary)
  AND p.dictionary_id IS NOT NULL;
