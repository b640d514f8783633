-- Rows in the raw export, before the preset's rules (cfpb): loaded + rejected.
SELECT count(*) FROM cfpb_export;
