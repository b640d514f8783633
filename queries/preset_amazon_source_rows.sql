-- Rows in the raw export, before the preset's rules (amazon): loaded + rejected.
SELECT count(*) FROM read_json($path, format = 'newline_delimited');
