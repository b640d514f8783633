-- A new dictionary invalidates the old atom ids, so assignments go with it.
DELETE FROM assignments;
DELETE FROM atoms;
DELETE FROM dictionary;
