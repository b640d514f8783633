-- Dataset statistics: records, distinct users and records carrying a user id (paper D.7 / E.8).
SELECT count(*), count(DISTINCT user_id), count(user_id) FROM records;
