INSERT INTO budget (dataset, epsilon_total, delta_total) VALUES ($dataset, $eps, $delta)
ON CONFLICT (dataset) DO UPDATE SET epsilon_total = excluded.epsilon_total, delta_total = excluded.delta_total;
