-- Would any target record take the store query's slow branch? (sketch.store_plan, with
-- $raw false and the catalog's facts already true.) A record is fast when its canonical
-- vector has at most $K entries (and, with $keyed, it has a user key); a record with no
-- vector at all (both lists NULL: it was never assigned an atom) and no raw rows gives no
-- row on either branch, so it counts as fast too. Anything else, a half-NULL vector
-- included, is slow. FALSE: the query is specialised on $all_fast. Separate EXISTS, so
-- each filter reaches the scan (zone maps) and stops at the first hit.
SELECT EXISTS (SELECT 1 FROM records WHERE split = 'target' AND (atom_ids IS NULL) <> (masses IS NULL))
    OR EXISTS (SELECT 1 FROM records WHERE split = 'target' AND (len(atom_ids) > $K OR len(masses) > $K))
    OR EXISTS (SELECT 1 FROM records WHERE split = 'target' AND $keyed AND user_key IS NULL
                                        AND atom_ids IS NOT NULL);
