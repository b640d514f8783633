-- Dataset statistics: text length in characters and in whitespace-separated words
-- (mean, p10, p50, p90, max of each).
WITH t AS (
    SELECT length(text) AS chars, len(string_split_regex(trim(text), '\s+')) AS words FROM records
)
SELECT
    avg(chars), quantile_cont(chars, 0.1), quantile_cont(chars, 0.5), quantile_cont(chars, 0.9), max(chars),
    avg(words), quantile_cont(words, 0.1), quantile_cont(words, 0.5), quantile_cont(words, 0.9), max(words)
FROM t;
