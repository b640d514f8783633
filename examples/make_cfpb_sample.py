"""Write the synthetic CFPB-shaped sample that a fresh clone runs the README's pipeline on.

    python examples/make_cfpb_sample.py            # rewrites examples/data/cfpb_complaints/complaints.jsonl.gz

The real CFPB complaints are not shipped (the consumers' narratives carry no licence that
clearly allows redistribution; see the README, "Datasets", for where to get them). This file
makes complaints with the same fields the `cfpb` preset reads — complaint_id, narrative,
product, sub_product, issue, sub_issue, company, state, date_received — whose narratives are
made up from phrases of their product / issue / sub-issue, with the CFPB's `XXXX` redactions.
Deterministic (a seeded generator: synthetic data, never released noise) and written with a
fixed gzip header, so the shipped file is exactly what this script writes
(tests/test_samples.py checks it).
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "data" / "cfpb_complaints" / "complaints.jsonl.gz"
N = 2400
SEED = 2023

# product -> issue -> {sub_issue or None: phrases}
TAXONOMY: dict[str, dict[str, dict[str | None, list[str]]]] = {
    "Checking or savings account": {
        "Managing an account": {
            "Deposits and withdrawals": ["my deposit never showed up", "the withdrawal was reversed without notice",
                                         "a check I deposited was held for ten days"],
            "Banking errors": ["the bank posted the same debit twice", "my balance was wrong after a transfer"],
            None: ["I could not manage my account online"],
        },
        "Closing an account": {
            "Company closed your account": ["they closed my account without telling me",
                                            "the bank shut my account and kept the balance"],
            "Can't close your account": ["I asked three times to close the account"],
        },
        "Problem caused by your funds being low": {
            "Overdrafts and overdraft fees": ["I was charged overdraft fees on a positive balance",
                                              "five overdraft fees in one day"],
            None: ["a fee for a low balance I never agreed to"],
        },
    },
    "Credit reporting": {
        "Incorrect information on your report": {
            "Information belongs to someone else": ["an account on my report is not mine",
                                                     "my report shows a stranger's address"],
            "Account status incorrect": ["the report says late but I paid on time",
                                         "a closed account is listed as open"],
            "Old information reappears or never goes away": ["a debt from ten years ago came back"],
        },
        "Problem with a credit reporting company's investigation into an existing problem": {
            "Their investigation did not fix an error on your report": ["the dispute came back verified with no proof",
                                                                       "they did not investigate my dispute"],
            "Was not notified of investigation status or results": ["I never heard back about the dispute"],
        },
        "Improper use of your report": {
            "Credit inquiries on your report that you don't recognize": ["hard inquiries I never authorized",
                                                                         "an inquiry from a lender I never contacted"],
            None: ["someone pulled my report without permission"],
        },
    },
    "Debt collection": {
        "Attempts to collect debt not owed": {
            "Debt is not yours": ["a collector calls about a debt that is not mine",
                                  "they want payment for an account I never opened"],
            "Debt was paid": ["I already paid this debt in full", "the collector ignores my proof of payment"],
        },
        "Communication tactics": {
            "Frequent or repeated calls": ["they call me eight times a day", "calls at work after I asked them to stop"],
            "Used obscene, profane, or other abusive language": ["the agent yelled and insulted me"],
        },
        "Written notification about debt": {
            "Didn't receive enough information to verify debt": ["they refused to send a validation letter"],
            None: ["no written notice before they reported it"],
        },
    },
    "Mortgage": {
        "Trouble during payment process": {
            None: ["my payment was applied to the wrong month", "the servicer lost two of my payments",
                   "escrow went up without an explanation"],
        },
        "Struggling to pay mortgage": {
            None: ["my loan modification was denied twice", "they started foreclosure during the review",
                   "forbearance was promised and never applied"],
        },
        "Applying for a mortgage or refinancing an existing mortgage": {
            None: ["the closing was delayed for weeks", "the rate lock expired because of their delay"],
        },
    },
    "Student loan": {
        "Dealing with your lender or servicer": {
            "Trouble with how payments are being handled": ["extra payments went to interest not principal",
                                                            "my autopay was cancelled without notice"],
            "Received bad information about your loan": ["they told me the wrong payoff amount"],
        },
        "Struggling to repay your loan": {
            "Problem lowering your monthly payments": ["my income driven repayment form was lost",
                                                       "they would not recalculate my payment"],
            "Can't get other flexible options for repaying your loan": ["deferment was refused without reason"],
        },
    },
    "Credit card or prepaid card": {
        "Problem with a purchase shown on your statement": {
            "Credit card company isn't resolving a dispute about a purchase on your statement":
                ["the card issuer sided with the merchant", "my chargeback was closed without a decision"],
            "Card was charged for something you did not purchase with the card":
                ["charges from a store I never visited", "a fraudulent charge on my card"],
        },
        "Fees or interest": {
            "Problem with fees": ["a late fee although I paid early", "an annual fee on a no fee card"],
            "Charged too much interest": ["the interest rate doubled without notice"],
        },
        "Getting a credit card": {
            "Card opened without my consent or knowledge": ["a card was opened in my name"],
            None: ["they denied the card and gave no reason"],
        },
    },
}
OPENERS = ["On XX/XX/XXXX I contacted the company.", "I am writing about my account with XXXX.",
           "This has gone on for months.", "I have called many times.", "To whom it may concern,", ""]
FILLERS = ["I was on hold for over an hour.", "Nobody gave me a reference number.",
           "I sent letters by certified mail.", "The representative said it would be fixed.",
           "I have documents to prove this.", "It is affecting my family."]
CLOSERS = ["Please help me resolve this.", "I want this corrected.", "I am asking the CFPB to intervene.",
           "I expect a refund.", ""]
COMPANIES = ["EQUIFAX, INC.", "TRANSUNION INTERMEDIATE HOLDINGS, INC.", "Experian Information Solutions Inc.",
             "BANK OF AMERICA, NATIONAL ASSOCIATION", "WELLS FARGO & COMPANY", "JPMORGAN CHASE & CO.",
             "CAPITAL ONE FINANCIAL CORPORATION", "Navient Solutions, LLC.", "Ocwen Financial Corporation"]
STATES = ["CA", "TX", "FL", "NY", "GA", "IL", "PA", "OH", "NC", "MI", "NJ", "VA", "WA", "AZ"]
SUB_PRODUCTS = {"Checking or savings account": ["Checking account", "Savings account"],
                "Credit reporting": ["Credit reporting"], "Debt collection": ["I do not know", "Medical debt",
                                                                              "Credit card debt"],
                "Mortgage": ["Conventional home mortgage", "FHA mortgage"],
                "Student loan": ["Federal student loan servicing", "Private student loan"],
                "Credit card or prepaid card": ["General-purpose credit card or charge card"]}


def combinations() -> list[tuple[str, str, str | None, list[str]]]:
    return [(p, i, s, phrases) for p, issues in TAXONOMY.items() for i, subs in issues.items()
            for s, phrases in subs.items()]


def complaints(n: int = N, seed: int = SEED) -> list[dict]:
    rng = np.random.default_rng(seed)   # synthetic data only, never released noise
    combos = combinations()
    weights = 1.0 / np.arange(1, len(combos) + 1) ** 0.7   # a heavy head, a long tail
    order = rng.permutation(len(combos))
    weights = weights[np.argsort(order)]
    weights /= weights.sum()
    rows = []
    for k in range(n):
        product, issue, sub_issue, phrases = combos[int(rng.choice(len(combos), p=weights))]
        said = [phrases[int(j)] for j in rng.choice(len(phrases), size=min(len(phrases), int(rng.integers(1, 3))),
                                                    replace=False)]
        parts = [OPENERS[int(rng.integers(len(OPENERS)))]]
        parts += [s[0].upper() + s[1:] + "." for s in said]
        parts += [FILLERS[int(j)] for j in rng.choice(len(FILLERS), size=int(rng.integers(0, 3)), replace=False)]
        parts.append(CLOSERS[int(rng.integers(len(CLOSERS)))])
        narrative = " ".join(p for p in parts if p)
        year, day = 2019 + int(rng.integers(0, 5)), int(rng.integers(0, 365))
        date = np.datetime64(f"{year}-01-01") + np.timedelta64(day, "D")
        rows.append({
            "complaint_id": 3_000_000 + 17 * k + int(rng.integers(0, 17)),
            "narrative": narrative if k % 400 != 399 else None,   # a few without one: the preset rejects them
            "product": product,
            "sub_product": SUB_PRODUCTS[product][int(rng.integers(len(SUB_PRODUCTS[product])))],
            "issue": issue,
            "sub_issue": sub_issue,
            "company": COMPANIES[int(rng.integers(len(COMPANIES)))],
            "state": STATES[int(rng.integers(len(STATES)))],
            "date_received": str(date),
        })
    return rows


def sample_bytes() -> bytes:
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in complaints())
    return gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)


if __name__ == "__main__":
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_bytes(sample_bytes())
    print(f"wrote {N} synthetic complaints to {OUT} ({OUT.stat().st_size} bytes)")
