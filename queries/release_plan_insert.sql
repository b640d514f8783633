INSERT INTO release_plans (release_id, plan, dictionary) VALUES ($release_id, $plan, $dictionary);
