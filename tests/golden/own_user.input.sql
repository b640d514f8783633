-- The warehouse's own tables (declared: the audit reads their column types), user level.
CREATE TABLE reviews (review_id BIGINT, author VARCHAR, body VARCHAR);
CREATE TABLE theme_scores (review_id BIGINT, theme VARCHAR, score DOUBLE);
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, delta = 1e-6, privacy_unit_column = author,
                                         contribution_bound = 1, mechanism = 'gaussian', top = 3)
       theme AS atom, DPSPIN_MASS(score)
FROM theme_scores JOIN reviews USING (review_id)
WHERE score > 0.1
GROUP BY theme;
