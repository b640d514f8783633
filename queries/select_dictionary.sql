SELECT dictionary_id, builder, manifest, scorer, created_at FROM dictionary LIMIT 1;
