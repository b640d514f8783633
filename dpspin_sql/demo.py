"""`dpspin demo`: the whole pipeline on a synthetic support-ticket corpus, in seconds.

The corpus is made up here (seeded `numpy` draws are fine for *synthetic data*; the
release's noise still comes from OpenDP). A few hundred users, a heavy tail of users with
many tickets, a public taxonomy of 30 atoms. Users are split into an auxiliary and a
target side, a scorer is fitted on the auxiliary side, and a user-level Gaussian plan is
released, verbalized by the template decoder, checked by the verifier and printed with
the budget left. It ends by writing a release card (`dpspin card`). Without `--db` the store is
temporary and deleted at the end; the plan, summary and card are kept in a new temporary directory (the card
at `--card` when given) and the card says the store is gone.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from rich.console import Console

TAXONOMY = [
    ("login failure", "cannot sign in, password rejected, locked out of the account"),
    ("password reset", "reset link or code for a forgotten password does not arrive"),
    ("two-factor codes", "authentication codes by text message or app are late or wrong"),
    ("double charge", "the same payment was billed twice on the card"),
    ("refund delay", "a promised refund has not been paid back yet"),
    ("subscription cancellation", "cannot cancel the plan or the subscription keeps renewing"),
    ("price increase", "the monthly price went up without clear notice"),
    ("invoice error", "wrong amount, address or tax on the invoice"),
    ("app crash", "the mobile app closes or freezes on start"),
    ("slow loading", "pages and screens take a long time to load"),
    ("sync failure", "data does not sync between phone, tablet and computer"),
    ("notification spam", "too many push notifications or emails"),
    ("missing notifications", "alerts and reminders never arrive"),
    ("data export", "cannot download or export my data as a file"),
    ("account deletion", "wants the account and personal data deleted"),
    ("privacy concern", "worried how personal data is shared or sold"),
    ("delivery delay", "the order or package arrived late or not at all"),
    ("damaged item", "the product arrived broken or damaged"),
    ("wrong item", "received a different product than ordered"),
    ("return process", "returning a product is confusing or the label is missing"),
    ("support wait time", "long wait on the phone or chat before reaching an agent"),
    ("unhelpful agent", "the support agent did not solve the problem"),
    ("language options", "the app or support is not available in my language"),
    ("accessibility", "screen reader, font size or contrast problems"),
    ("dark mode", "requests a dark theme for the app"),
    ("search quality", "search results are irrelevant or missing items"),
    ("feature request", "asks for a new feature or integration"),
    ("battery drain", "the app drains the phone battery quickly"),
    ("offline mode", "the app does not work without an internet connection"),
    ("upgrade confusion", "unclear what the premium upgrade includes"),
]
OPENERS = ["Hi team,", "Hello,", "Not happy:", "Quick question.", "Third time writing.", "Dear support,", ""]
CLOSERS = ["Please help.", "Thanks.", "Fix this soon.", "Any update?", "", "Regards."]


def synthetic_corpus(seed: int = 7, n_users: int = 400) -> dict[str, list[str]]:
    """Tickets whose text mentions the words of 1–2 themes a user cares about (columns
    record_id, user_id, text as lists)."""
    rng = np.random.default_rng(seed)  # synthetic data only, never released noise
    popularity = rng.dirichlet(np.full(len(TAXONOMY), 0.6))
    ids: list[str] = []
    users: list[str] = []
    texts: list[str] = []
    for u in range(n_users):
        n = 1 + int(min(rng.pareto(1.3) * 2, 60))  # heavy tail: a few users write dozens
        likes = rng.choice(len(TAXONOMY), size=3, replace=False, p=popularity)
        for _ in range(n):
            themes = rng.choice(likes, size=rng.integers(1, 3), replace=False)
            words = " ".join(f"{TAXONOMY[t][0]}: {TAXONOMY[t][1]}." for t in themes)
            texts.append(f"{rng.choice(OPENERS)} {words} {rng.choice(CLOSERS)}".strip())
            ids.append(f"t{len(ids):06d}")
            users.append(f"u{u:04d}")
    return {"record_id": ids, "user_id": users, "text": texts}


def corpus_relation(con, seed: int = 7, n_users: int = 400, *, name: str = "synthetic_corpus"):
    """The synthetic corpus as a DuckDB relation on `con` (a registered view `name`)."""
    corpus = synthetic_corpus(seed, n_users)
    con.register(name, {col: np.array(values, dtype=object) for col, values in corpus.items()})
    return con.table(name)


def run(db: Path | None = None, *, seed: int = 7, console: Console | None = None, epsilon: float = 1.0,
        card: Path | None = None):
    """Build the demo store, release a user-level plan, print it, write its release card
    (to `card`, default: beside the store, or a kept temporary directory); returns the plan."""
    from dpspin_sql import assign, atoms, ledger, split, store
    from dpspin_sql.release import release
    from dpspin_sql.report import plan_table
    from dpspin_sql.request import ReleaseRequest

    console = console or Console()
    tmp = None
    if db is None:   # the store is temporary; the plan, summary and card are kept in a directory of their own
        tmp = tempfile.TemporaryDirectory(prefix="dpspin-demo-store-")
        db = Path(tmp.name) / "demo.duckdb"
        outputs = Path(tempfile.mkdtemp(prefix="dpspin-demo-"))
    else:
        outputs = Path(db).parent
    try:
        if Path(db).exists():
            from dpspin_sql.errors import BadInput

            raise BadInput(f"--db {db} already exists; the demo builds a new store (give a new path)")
        con = store.connect(db, create=True)
        ledger.set_budget(con, epsilon_total := 2.0 * epsilon, 1e-5)
        rel = corpus_relation(con, seed)
        corpus = synthetic_corpus(seed)
        store.load_records(con, "synthetic", id_col="record_id", user_col="user_id", text_col="text", relation=rel)
        rep = split.split(con, unit="user", aux_fraction=0.3, seed=seed)
        atoms.install(con, [atoms.Atom(i, lab, desc) for i, (lab, desc) in enumerate(TAXONOMY)], builder="file",
                      manifest={"source": "dpspin demo taxonomy"})
        report = assign.assign(con, scorer="similarity", K=3)
        fid = report.fidelity or {}
        console.print(f"synthetic corpus: {len(corpus['record_id'])} tickets from {len(set(corpus['user_id']))} "
                      f"users; {rep.aux_records} auxiliary / {rep.target_records} target records; "
                      f"the {report.scorer} scorer, calibrated on the auxiliary records, assigned "
                      f"{report.n_assigned} records ({report.n_unassigned} expressed no atom and abstain); "
                      f"on held-out auxiliary records {fid.get('precision', 0):.0%} of its mass comes from tickets "
                      f"that name the atom's words and it finds {fid.get('recall', 0):.0%} of them", highlight=False)
        request = ReleaseRequest(mechanism="gaussian", epsilon=epsilon, delta=1e-6, unit="user", B=1.0, K=3, L=10)
        out = outputs / "private_plan.json"
        summary_path, attempts_path = out.with_name("summary.txt"), out.with_name("verifier_attempts.json")
        for stale in (out, out.with_name("private_plan.dictionary.json"), summary_path, attempts_path):
            stale.unlink(missing_ok=True)   # the demo's own previous outputs
        plan = release(con, request, out=out)
        console.print(plan_table(plan))
        from dpspin_sql.decode import summarize

        summary = summarize(plan.to_dict(), decoder="template",
                            dictionary=[{"atom_id": a.atom_id, "label": a.label} for a in atoms.current_atoms(con)])
        verdict = "accepted by the verifier" if summary.accepted else "REJECTED by the verifier"
        console.print(f"[bold]summary[/bold] ({verdict}):", summary.text, sep="\n", highlight=False)
        from dpspin_sql.decode import write_summary

        write_summary(summary, summary_path, attempts_path)
        st = ledger.status(con)
        console.print(f"budget left: ε={st.epsilon_remaining:.4g} of {epsilon_total:g}, "
                      f"δ={st.delta_remaining:.3g} of {st.delta_total:g}")
        where = f"store {db}" if tmp is None else "the store was temporary (dpspin demo --db FILE keeps it)"
        console.print(f"{where}; plan {out}; summary {summary_path}", highlight=False)
        con.close()
        card_path = _write_card(db, out, summary_path, attempts_path, card, store_kept=tmp is None)
        console.print(f"release card (open it in a browser): {card_path}", highlight=False)
        return plan
    finally:
        if tmp is not None:
            tmp.cleanup()


def _write_card(db: Path, plan_path: Path, summary_path: Path, attempts_path: Path, card: Path | None,
                store_kept: bool) -> Path:
    """The demo release's card (default: beside the plan), with the ledger history, the
    summary and its attempts."""
    from dpspin_sql.card import gather, write_card
    from dpspin_sql.outputs import Outputs

    if card is None:
        card = plan_path.with_name("release_card.html")
    Outputs(inputs=[plan_path, summary_path, attempts_path], store=db).add(card, "--card")
    data = gather(plan_path, db=db, summary=summary_path, attempts=attempts_path)
    data.store_gone = not store_kept   # the temporary store is deleted when the demo returns
    return write_card(data, card)
