"""`dpspin summarize` and `dpspin verify` (SPEC §9): thin Typer wrappers over decode/verify.

Exit codes: 0 success/accepted, 1 the verifier rejected, 2 bad input (one line on stderr).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from .decode import LLMConfig, summarize, write_summary
from .verify import plan_dict, verify


def _fail(msg: str) -> None:
    typer.echo(f"error: {msg}", err=True)
    raise typer.Exit(2)


def _load_plan(path: Path) -> dict:
    try:
        return plan_dict(json.loads(Path(path).read_text(encoding="utf-8")))
    except FileNotFoundError:
        _fail(f"plan file not found: {path}")
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        _fail(f"malformed plan JSON in {path}: {e}")
    except (ValueError, TypeError) as e:
        _fail(f"not a DP-SPIN plan ({path}): {e}")
    except OSError as e:
        _fail(f"cannot read {path}: {e}")


def _load_dictionary(path: Optional[Path], plan: dict, plan_path: Path) -> Optional[list]:
    """--dictionary, else the sidecar `dpspin release` writes beside the plan (PLAN.dictionary.json)."""
    if path is None:
        sidecar = plan_path.with_name(plan_path.stem + ".dictionary.json")
        if plan.get("dictionary_labels"):
            return None
        if not sidecar.exists():
            typer.echo(f"note: no public dictionary beside the plan ({sidecar.name}) and no --dictionary: "
                       "mentions of non-admitted atoms cannot be detected", err=True)
            return None
        path = sidecar
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        _fail(f"cannot read dictionary {path}: {e}")
    if path.suffix == ".json":
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            _fail(f"malformed dictionary JSON in {path}: {e}")
        if isinstance(obj, dict):
            if plan.get("dictionary") and obj.get("dictionary") not in (None, plan["dictionary"]):
                _fail(f"dictionary {path} ({obj.get('dictionary')}) is not the plan's ({plan['dictionary']})")
            obj = obj.get("atoms", obj.get("dictionary_labels"))
        if not isinstance(obj, list):
            _fail(f"dictionary {path} must be a list of labels or {{atom_id, label}} objects")
        return obj
    return [line.strip() for line in text.splitlines() if line.strip()]


def register(app: typer.Typer) -> None:
    """Add the `summarize` and `verify` commands to the dpspin app."""

    @app.command("summarize")
    def summarize_cmd(
        plan: Path = typer.Argument(..., help="private_plan.json from `dpspin release`"),
        decoder: str = typer.Option("template", "--decoder", help="template | llm"),
        max_attempts: int = typer.Option(3, "--max-attempts", help="R_max: LLM attempts before the template fallback"),
        out: Optional[Path] = typer.Option(None, "--out", help="write the final summary here (summary.txt)"),
        attempts_out: Optional[Path] = typer.Option(None, "--attempts-out",
                                                    help="verifier_attempts.json (default: next to --out)"),
        base_url: Optional[str] = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint (or DPSPIN_LLM_BASE_URL)"),
        model: Optional[str] = typer.Option(None, "--model", help="model name (or DPSPIN_LLM_MODEL)"),
        api_key: Optional[str] = typer.Option(None, "--api-key", help="API key (or DPSPIN_LLM_API_KEY / OPENAI_API_KEY)"),
        mode: str = typer.Option("text", "--mode", help="text | claims (structured JSON claims)"),
        temperature: float = typer.Option(0.7, "--temperature"),
        max_tokens: int = typer.Option(400, "--max-tokens"),
        dictionary: Optional[Path] = typer.Option(None, "--dictionary", help="public dictionary labels (.txt/.json) if the plan lacks them"),
    ) -> None:
        """Verbalize a plan; LLM output is verified, retried with feedback, else the template is used."""
        p = _load_plan(plan)
        if decoder not in ("template", "llm") or mode not in ("text", "claims"):
            _fail("--decoder must be template|llm and --mode text|claims")
        cfg = LLMConfig(base_url=base_url, model=model, api_key=api_key, mode=mode,
                        temperature=temperature, max_tokens=max_tokens)
        try:
            result = summarize(p, decoder=decoder, max_attempts=max_attempts, llm=cfg,
                               dictionary=_load_dictionary(dictionary, p, plan))
        except ValueError as e:
            _fail(str(e))
        if attempts_out is None and out is not None:
            attempts_out = out.parent / "verifier_attempts.json"
        write_summary(result, out, attempts_out)
        typer.echo(result.text)
        if result.fallback_used:
            typer.echo(f"note: no LLM candidate accepted in {max_attempts} attempt(s); template fallback used", err=True)
        raise typer.Exit(0 if result.accepted else 1)

    @app.command("verify")
    def verify_cmd(
        plan: Path = typer.Argument(..., help="private_plan.json"),
        summary: Path = typer.Argument(..., help="summary text file"),
        as_json: bool = typer.Option(False, "--json", help='print {"accepted", "violations": [...]}'),
        dictionary: Optional[Path] = typer.Option(None, "--dictionary", help="public dictionary labels (.txt/.json) if the plan lacks them"),
    ) -> None:
        """Check a summary against a plan: exit 0 accepted, 1 rejected."""
        p = _load_plan(plan)
        try:
            text = Path(summary).read_text(encoding="utf-8")
        except OSError as e:
            _fail(f"cannot read summary {summary}: {getattr(e, 'strerror', e)}")
        verdict = verify(text, p, dictionary=_load_dictionary(dictionary, p, plan))
        if as_json:
            typer.echo(json.dumps(verdict.to_dict(), ensure_ascii=False))
        elif verdict.accepted:
            typer.echo("accepted")
        else:
            typer.echo(f"rejected: {len(verdict.violations)} violation(s)")
            for v in verdict.violations:
                typer.echo(f"  [{v.code}] {v.span!r}: {v.message}")
        raise typer.Exit(0 if verdict.accepted else 1)
