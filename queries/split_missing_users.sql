-- Records a user-level split cannot place: without a user id they would all hash as
-- one "user", silently merging strangers into one protected unit.
SELECT count(*) FROM records WHERE user_id IS NULL;
