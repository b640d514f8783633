-- Auxiliary texts for the phrase builder, in a fixed order.
SELECT COALESCE(text, '') AS text FROM records WHERE split = 'aux' ORDER BY record_id;
