SELECT epsilon_total, delta_total FROM budget WHERE dataset = $dataset;
