"""`dpspin summarize` and `dpspin verify`: turn a plan into text, and check text against a plan.

Both validate the plan first (docs/PLAN.md): a plan with more atoms than L, an atom that
is not in its dictionary, a non-finite mass or a dictionary whose hash is not the plan's
is refused (exit 2) before anything is decoded, verified or written.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from dpspin_sql.cli.common import err, example, out
from dpspin_sql.errors import BadInput, Refusal

app = typer.Typer()


def read_plan(plan_path: Path, dictionary_path: Optional[Path]) -> tuple[dict, Optional[list], Optional[Path]]:
    """The validated plan, the public dictionary to verify against (or None), and the
    dictionary file that was read."""
    from dpspin_sql.outputs import dictionary_sidecar
    from dpspin_sql.plan import read_json, validate_plan

    plan = read_json(plan_path, "plan")
    if isinstance(plan, dict) and plan.get("kind") == "comparison":
        return _read_comparison(plan_path, plan, dictionary_path)
    if isinstance(plan, dict) and isinstance(plan.get("segments"), list):
        raise BadInput(f"{plan_path} is a segmented plan (schema 3, docs/PLAN.md): summaries of one plan's atoms do "
                       "not apply; compare its segments (dpspin compare) or card one (dpspin card --segment)")
    path = dictionary_path
    if path is None:
        sidecar = dictionary_sidecar(plan_path)
        path = sidecar if sidecar.exists() else None
    if path is None:
        validate_plan(plan)
        if not (isinstance(plan, dict) and plan.get("dictionary_labels")):
            err.print(f"note: no public dictionary beside the plan ({dictionary_sidecar(plan_path).name}) and no "
                      "--dictionary: mentions of non-admitted atoms cannot be detected")
        return plan, None, None
    if path.suffix.lower() == ".json":
        body = read_json(path, "dictionary")
        if isinstance(body, dict):
            validate_plan(plan, body)
            return plan, body["atoms"], path
        if not isinstance(body, list):
            raise BadInput(f"dictionary {path} must be a list of labels or {{atom_id, label}} objects")
        validate_plan(plan)
        return plan, body, path
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        raise BadInput(f"cannot read dictionary {path}") from None
    validate_plan(plan)
    return plan, [line.strip() for line in lines if line.strip()], path


def _read_comparison(path: Path, comp: dict, dictionary_path: Optional[Path]) -> tuple[dict, Optional[list],
                                                                                    Optional[Path]]:
    """A comparison (`dpspin compare`) checked as the "plan": its shape, and the public dictionary from
    --dictionary or beside one of the compared plans (a plan's sidecar beside the comparison)."""
    from dpspin_sql.compare import validate_comparison
    from dpspin_sql.outputs import dictionary_sidecar
    from dpspin_sql.plan import read_json

    validate_comparison(comp)
    candidates = [dictionary_path] if dictionary_path is not None else [
        dictionary_sidecar(path.parent / str(comp[w].get("plan"))) for w in ("a", "b") if comp[w].get("plan")]
    for side in candidates:
        if side is not None and side.is_file():
            body = read_json(side, "dictionary")
            labels = body["atoms"] if isinstance(body, dict) else body
            if not isinstance(labels, list):
                raise BadInput(f"dictionary {side} must be a list of labels or {{atom_id, label}} objects")
            if isinstance(body, dict):
                from dpspin_sql.plan import hash_entries

                try:
                    digest = hash_entries(body["atoms"])
                except (KeyError, TypeError, ValueError):
                    raise BadInput(f"the dictionary file {side} has malformed atoms") from None
                if comp.get("dictionary") and digest != comp["dictionary"]:
                    raise BadInput(f"dictionary {side} hashes to {digest[:19]}…, not the comparison's "
                                   f"{str(comp['dictionary'])[:19]}…")
            return comp, labels, side
    err.print(f"note: no public dictionary found for the comparison {path.name} (pass --dictionary): mentions of "
              "themes in neither plan cannot be detected")
    return comp, None, None


@app.command("summarize", rich_help_panel="Read", epilog=example(
    "dpspin summarize private_plan.json --out summary.txt"))
def summarize_cmd(
    plan: Path = typer.Argument(..., help="private_plan.json from `dpspin release`"),
    decoder: str = typer.Option("template", "--decoder", help="template | llm"),
    max_attempts: int = typer.Option(3, "--max-attempts", help="R_max: LLM attempts before the template fallback"),
    summary_out: Optional[Path] = typer.Option(None, "--out", help="write the final summary here (summary.txt)"),
    attempts_out: Optional[Path] = typer.Option(None, "--attempts-out",
                                                help="verifier_attempts.json (default: next to --out)"),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint (or DPSPIN_LLM_BASE_URL)"),
    model: Optional[str] = typer.Option(None, "--model", help="model name (or DPSPIN_LLM_MODEL)"),
    api_key: Optional[str] = typer.Option(None, "--api-key", help="API key (or DPSPIN_LLM_API_KEY / OPENAI_API_KEY)"),
    mode: str = typer.Option("claims", "--mode",
                             help="claims (the model picks plan facts under a schema/grammar; they are written "
                                  "from the plan) | text (the model writes free text)"),
    constraint: Optional[str] = typer.Option(None, "--constraint",
                                             help="claims mode: json_schema | json_object_schema | guided_json | "
                                                  "grammar | json_object | none (default: detect per endpoint)"),
    fallback: Optional[bool] = typer.Option(None, "--fallback/--no-fallback",
                                            help="--no-fallback: exit 1 when no model attempt passes (no summary "
                                                 "written); --fallback: also fall back when the endpoint cannot be "
                                                 "reached (default: fall back after R_max rejections only)"),
    temperature: float = typer.Option(0.7, "--temperature"),
    max_tokens: int = typer.Option(400, "--max-tokens"),
    timeout: float = typer.Option(120.0, "--timeout", help="seconds to wait for one model answer"),
    dictionary: Optional[Path] = typer.Option(None, "--dictionary",
                                              help="public dictionary (.json or .txt) if the plan has no sidecar"),
) -> None:
    """Verbalize a plan; LLM output is verified, retried with feedback, else the template is used.

    stdout is the final summary; stderr says where it came from (model or template fallback,
    the attempt that passed, whether the first did); verifier_attempts.json records the same
    (final_source, attempts_used, first_attempt_accepted) with every attempt."""
    from dpspin_sql.decode import CONSTRAINTS, EndpointUnreachable, LLMConfig, summarize, write_summary
    from dpspin_sql.outputs import Outputs

    p, labels, dictionary_file = read_plan(plan, dictionary)
    if decoder not in ("template", "llm") or mode not in ("text", "claims"):
        raise BadInput("--decoder must be template|llm and --mode text|claims")
    if constraint is not None and constraint not in CONSTRAINTS:
        raise BadInput(f"--constraint must be one of {'|'.join(CONSTRAINTS)}")
    if attempts_out is None and summary_out is not None:
        attempts_out = summary_out.parent / "verifier_attempts.json"
    outputs = Outputs(inputs=[plan, dictionary_file])
    for path, option in ((summary_out, "--out"), (attempts_out, "--attempts-out")):
        if path is not None:
            outputs.add(path, option)
    cfg = LLMConfig(base_url=base_url, model=model, api_key=api_key, mode=mode, constraint=constraint,
                    temperature=temperature, max_tokens=max_tokens, timeout=timeout)
    try:
        result = summarize(p, decoder=decoder, max_attempts=max_attempts, llm=cfg, dictionary=labels,
                           fallback=fallback)
    except EndpointUnreachable as e:
        hint = "" if fallback is False else "; pass --fallback to use the template summary instead"
        raise EndpointUnreachable(f"{e}{hint}") from None
    if result.final_source is None:  # --no-fallback and no attempt passed
        write_summary(result, None, attempts_out)
        where = f"; attempts in {attempts_out}" if attempts_out else ""
        raise Refusal(f"refused: no model-written summary passed the verifier in {result.attempts_used} attempt(s) "
                      f"and --no-fallback was given; no summary written{where}")
    if not result.accepted:
        raise Refusal("refused: no summary, not even the template fallback, passed the verifier; nothing written")
    write_summary(result, summary_out, attempts_out)
    typer.echo(result.text)
    if decoder == "llm":
        err.print(("note: " if result.fallback_used else "") + result.status_line(), markup=False)


@app.command("verify", rich_help_panel="Read", epilog=example(
    "dpspin verify private_plan.json summary.txt"))
def verify_cmd(
    plan: Path = typer.Argument(..., help="private_plan.json"),
    summary: Path = typer.Argument(..., help="summary text file"),
    as_json: bool = typer.Option(False, "--json/--no-json", help='print {"accepted", "violations": [...]}'),
    dictionary: Optional[Path] = typer.Option(None, "--dictionary",
                                              help="public dictionary (.json or .txt) if the plan has no sidecar"),
) -> None:
    """Check a summary against a plan: exit 0 accepted, 1 rejected."""
    from dpspin_sql.verify import verify

    p, labels, _ = read_plan(plan, dictionary)
    try:
        text = Path(summary).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadInput(f"summary file not found: {summary}") from None
    except (OSError, UnicodeDecodeError):
        raise BadInput(f"cannot read summary {summary} as UTF-8 text") from None
    verdict = verify(text, p, dictionary=labels)
    if as_json:
        typer.echo(json.dumps(verdict.to_dict(), ensure_ascii=False))
    elif verdict.accepted:
        out.print("accepted")
    else:
        out.print(f"rejected: {len(verdict.violations)} violation(s)")
        for v in verdict.violations:
            out.print(f"  [{v.code}] {v.span!r}: {v.message}", markup=False)
    if not verdict.accepted:
        err.print(f"rejected: {len(verdict.violations)} violation(s)", markup=False)
    raise typer.Exit(0 if verdict.accepted else 1)
