INSERT INTO dictionary (dictionary_id, builder, manifest, scorer, created_at)
VALUES ($dictionary_id, $builder, $manifest, $scorer, $created_at);
