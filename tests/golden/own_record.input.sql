-- The warehouse's own tables, record level: integer atom ids, an ON join, a schema-qualified table.
CREATE TABLE shop.posts (post_id BIGINT, body VARCHAR, stars INTEGER);
CREATE TABLE post_topics (post_id BIGINT, topic BIGINT, w DOUBLE);
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.25, mechanism = 'laplace', top = 3)
       t.topic, DPSPIN_MASS(t.w)
FROM post_topics AS t JOIN shop.posts AS p ON t.post_id = p.post_id
WHERE p.stars >= 2 AND t.w > 0.05
GROUP BY t.topic;
