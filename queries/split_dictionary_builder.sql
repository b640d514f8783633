SELECT builder FROM dictionary;
