"""Ten-theme plans (Amazon-, CFPB- and Yelp-like) for the rule tables of test_verify_rules.py."""
from __future__ import annotations

import copy


def make_plan(labels, masses, denom=None, extra_dict=(), margin=14.9, eps=1.0, half_width=None, m=50, **extra):
    atoms = []
    for r, (label, mass) in enumerate(zip(labels, masses), start=1):
        a = {"atom_id": r - 1, "label": label, "description": "", "noisy_mass": mass,
             "display_mass": max(mass, 0.0), "rank": r}
        if denom:
            a["support"] = a["display_mass"] / denom
            a["bin"] = "high" if a["support"] >= 0.10 else "moderate" if a["support"] >= 0.03 else "low"
        else:
            a["bin"] = "high" if r <= 3 else "moderate" if r <= 7 else "low"
        if half_width:
            a["interval"] = [round(mass - half_width, 1), round(mass + half_width, 1)]
            if denom:
                a["support_interval"] = [round((mass - half_width) / denom, 6), round((mass + half_width) / denom, 6)]
        atoms.append(a)
    plan = {"schema_version": "1", "mechanism": "gaussian", "epsilon": eps, "delta": 1e-6, "unit": "record",
            "adjacency": "add_drop", "B": 1.0, "K": 3, "L": len(labels), "m": m, "calibration": "zcdp",
            "noise_scale": 5.38, "comparison_margin": margin,
            "bins": {"high": 0.10, "moderate": 0.03} if denom else {"high": 3, "moderate": 7},
            "dictionary_labels": [{"atom_id": i, "label": lbl} for i, lbl in enumerate(list(labels) + list(extra_dict))],
            "atoms": atoms}
    if denom:
        plan["public_denominator"] = denom
    if half_width:
        plan["interval_confidence"] = 0.95
        plan["interval_half_width"] = half_width
    plan.update(extra)
    return plan


# supports: 12.2% high; 9.6, 9.4, 6.0, 3.0 moderate; 2.4, 1.8, 1.2, 0.8, 0.7 low  (n_high 1, n_moderate 4, n_low 5)
AMAZON = make_plan(["dry skin", "long lasting", "strong smell", "great price", "easy application", "skin irritation",
                    "broken bottle", "hair color", "small bottle", "nice scent"],
                   [612.4, 479.6, 470.2, 301.0, 150.5, 120.3, 88.0, 61.2, 40.5, 35.1], denom=5000,
                   extra_dict=["oily skin", "waste money", "fast shipping", "lip balm", "face mask"])
# supports: 15.6, 12.1 high; 7.7, 6.1, 3.2, 3.1 moderate; 2.3, 1.5, 1.3, 1.0 low  (n_high 2, n_moderate 4, n_low 4)
CFPB = make_plan(["Credit reporting / Incorrect information on your report / Information belongs to someone else",
                  "Credit reporting / Problem with a company's investigation into an existing problem / Their investigation did not fix an error on your report",
                  "Debt collection / Attempts to collect debt not owed / Debt is not yours",
                  "Credit reporting / Improper use of your report / Reporting company used your report improperly",
                  "Checking or savings account / Managing an account / Deposits and withdrawals",
                  "Credit card / Fees or interest / Problem with fees",
                  "Mortgage / Trouble during payment process",
                  "Debt collection / Written notification about debt / Didn't receive enough information to verify debt",
                  "Money transfer, virtual currency, or money service / Fraud or scam",
                  "Credit card / Problem with a purchase shown on your statement / Credit card company isn't resolving a dispute about a purchase on your statement"],
                 [3120.4, 2410.9, 1530.2, 1210.7, 640.3, 620.1, 455.8, 301.2, 250.6, 198.4], denom=20000,
                 extra_dict=["Mortgage / Struggling to pay mortgage", "Vehicle loan or lease / Struggling to pay your loan"],
                 half_width=8.8)
# rank bins: 1-3 high, 4-7 moderate, 8-10 low; no denominator
YELP = make_plan(["friendly staff", "long wait", "fresh ingredients", "happy hour", "outdoor seating", "slow service",
                  "good value", "cold food", "live music", "clean restroom"],
                 [402.0, 350.3, 341.0, 120.7, 110.2, 95.3, 60.1, 30.2, 12.0, -4.1], margin=12.0, eps=2.0, m=16,
                 extra_dict=["rude staff", "parking lot", "great atmosphere", "spicy food", "large portions"])
AMAZON_IV = make_plan([a["label"] for a in AMAZON["atoms"]], [a["noisy_mass"] for a in AMAZON["atoms"]], denom=5000,
                      half_width=8.8)
YELP_IV = make_plan([a["label"] for a in YELP["atoms"]], [a["noisy_mass"] for a in YELP["atoms"]], margin=12.0,
                    eps=2.0, m=16, half_width=8.8)
PLANS = {"amazon": AMAZON, "cfpb": CFPB, "yelp": YELP, "amazon_iv": AMAZON_IV, "yelp_iv": YELP_IV}


def plan(name: str) -> dict:
    return copy.deepcopy(PLANS[name])
