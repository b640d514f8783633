SELECT count(*) FROM records WHERE split = 'target';
