INSERT INTO ledger (release_id, dataset, created_at, mechanism, epsilon, delta, params, measurements, plan_path,
                    seq, prev_hash, row_hash, plan_stored)
VALUES ($release_id, $dataset, $created_at, $mechanism, $eps, $delta, $params, $measurements, $plan_path,
        $seq, $prev_hash, $row_hash, $plan_stored);
