-- Reviews in the raw export, before the preset's rules (restaurants only): loaded + rejected.
SELECT count(*) FROM read_json($reviews, format = 'newline_delimited');
