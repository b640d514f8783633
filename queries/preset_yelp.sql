-- Yelp reviews joined to their businesses on business_id, restaurants only (a
-- business whose categories contain "Restaurants": separated by "; " in the 2013 dataset,
-- by ", " in the current Yelp Open Dataset). One record per
-- review; user_id is the protected unit at user level.
WITH reviews AS (
    SELECT * FROM read_json($reviews, format = 'newline_delimited')
),
restaurants AS (
    SELECT business_id, name, categories
    FROM read_json($businesses, format = 'newline_delimited')
    WHERE list_contains(regexp_split_to_array(COALESCE(categories, ''), '\s*[;,]\s*'), 'Restaurants')
)
SELECT
    r.review_id AS record_id,
    r.user_id,
    r.text,
    r.business_id,
    b.name AS business_name,
    b.categories,
    CAST(r.stars AS DOUBLE) AS stars,
    CAST(r.date AS VARCHAR) AS date
FROM reviews AS r
JOIN restaurants AS b ON b.business_id = r.business_id;
