SELECT count(*) FROM atoms;
