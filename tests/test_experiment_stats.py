"""Dataset statistics on a tiny Amazon-format corpus with known per-user counts."""
from __future__ import annotations

import gzip
import json

from dpspin_sql.experiment import stats


def test_dataset_stats_users_and_lengths(tmp_path):
    path = tmp_path / "reviews.jsonl.gz"
    per_user = {"u1": 1, "u2": 2, "u3": 5}
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for u, k in per_user.items():
            for i in range(k):
                fh.write(json.dumps({"user_id": u, "parent_asin": f"P{i % 2}", "asin": f"A{i}", "rating": 5.0 - i % 2,
                                     "title": "Nice", "text": f"dry skin cream number {i}", "timestamp": i}) + "\n")
    s = stats.dataset_stats("amazon", path)
    assert (s["records"], s["users"], s["records_with_valid_user_id"]) == (8, 3, 8)
    assert s["users_with_several_records"] == 2
    assert s["records_per_user"]["max"] == 5
    assert s["records_per_user"]["users_by_records"] == {"1": 1, "2": 1, "3": 0, "4-5": 1, "6-10": 0, "11-20": 0,
                                                         ">=21": 0}
    assert s["text_words"]["max"] == 6          # "Nice. dry skin cream number N"
    assert dict((v, c) for v, c in s["top_categories"]["parent_asin"]) == {"P0": 5, "P1": 3}
    md = stats.to_markdown("amazon", s)
    assert "users with several records: 2" in md
