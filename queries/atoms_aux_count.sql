SELECT count(*) FROM records WHERE split = 'aux';
