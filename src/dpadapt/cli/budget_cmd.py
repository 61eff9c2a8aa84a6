"""``dpadapt budget show|set|history``: the party's persistent privacy budgets (SQLite ledger).

Each party keeps a privacy budget (ε, δ) per dataset in a SQLite ledger (--ledger, $DPADAPT_LEDGER,
or the user data dir). Releases are charged by composing their dp-accounting events (RDP), not by
adding ε.
"""

from __future__ import annotations

import argparse
import os
import json
import math
from pathlib import Path

from dpadapt.cli.main import add_command
from dpadapt.cli.table_options import add_table_arguments
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dpadapt.privacy.ledger import Ledger


def add_parser(sub: argparse._SubParsersAction) -> None:
    p, bsub = add_command(sub, "budget", __doc__.split("\n\n")[1], actions="action")
    show = bsub.add_parser("show", help="budgets, what is spent and what is left")
    setp = bsub.add_parser("set", help="set the budget of a dataset")
    hist = bsub.add_parser("history", help="every release charged to the ledger")
    for q in (show, setp, hist):
        q.add_argument("--ledger", help="ledger file (default: $DPADAPT_LEDGER or the user data dir)")
        q.add_argument("--party", required=q is setp, help="party name (source / target, or your own)")
        q.add_argument("--data", help="the dataset's file (its SHA-256 is the dataset id)")
        q.add_argument("--dataset-id", help="the dataset id (instead of --data)")
    for q in (show, hist):
        q.add_argument("--json", action="store_true", help="print JSON")
    show.add_argument("--history", action="store_true", help="also list the releases (as `budget history`)")
    setp.add_argument("--epsilon", type=float, required=True)
    setp.add_argument("--delta", type=float, required=True)
    setp.add_argument("--label", help="a human-readable name for the dataset (a display name, not the label column)")
    setp.add_argument("--label-column", default="y", help="label column of a .csv/.parquet file without --schema (default y)")
    add_table_arguments(setp)
    show.set_defaults(func=run_show)
    setp.set_defaults(func=run_set)
    hist.set_defaults(func=run_history)
    p.set_defaults(func=run_show, ledger=None, party=None, data=None, dataset_id=None, json=False, history=False)


def _dataset_id(args) -> str | None:
    from dpadapt.privacy.ledger import fingerprint  # here, not at import: `--help` stays fast

    if args.data and args.dataset_id:
        raise ValueError("give --data or --dataset-id, not both")
    if args.data and os.path.isdir(args.data):
        raise ValueError(f"{args.data}: is a folder, not a data file; give the dataset's file")
    if args.data and not os.path.exists(args.data):
        raise ValueError(f"{args.data}: no such data file")
    return fingerprint(args.data) if args.data else args.dataset_id


def _eps(x: float) -> str:
    return "∞" if math.isinf(x) else f"{x:.4g}"


def run_set(args) -> int:
    from dpadapt.privacy.ledger import Ledger, short_id  # here, not at import: `--help` stays fast

    dataset_id = _dataset_id(args)
    if dataset_id is None:
        raise ValueError("give --data FILE or --dataset-id ID")
    if not (math.isfinite(args.epsilon) and args.epsilon > 0):
        raise ValueError(f"--epsilon must be a finite number > 0, got {args.epsilon}")
    if args.data:
        from dpadapt.cli.table_options import load_data

        n = load_data(args).X.shape[0]  # a budget for a file no release can be computed from is a mistake
        if args.delta >= 1.0 / n:
            raise ValueError(f"--delta {args.delta:g} is ≥ 1/n = {1.0 / n:.3g} for the {n} rows of {args.data}: refused (use δ ≪ 1/n)")
    ledger = Ledger(args.ledger)
    b = ledger.set_budget(args.party, dataset_id, args.epsilon, args.delta, args.label or args.data)
    print(f"ledger {ledger.path}: budget of {b.party} / dataset {short_id(b.dataset_id)} set to (ε = {b.epsilon:g}, δ = {b.delta:g})")
    return 0


def _existing_ledger(args, empty_json: object) -> Ledger | None:
    """The ledger, or ``None`` (saying so) when its file does not exist: showing never creates a ledger."""
    from dpadapt.privacy.ledger import Ledger, default_path  # here, not at import: `--help` stays fast

    path = Path(args.ledger) if args.ledger else default_path()
    if path.exists():
        return Ledger(path)
    if args.json:
        print(json.dumps(empty_json, indent=2))
    else:
        print(f"no ledger at {path} yet (nothing released; `dpadapt budget set` or a release creates it)")
    return None


def run_show(args) -> int:
    from dpadapt.privacy.ledger import short_id  # here, not at import: `--help` stays fast

    ledger = _existing_ledger(args, {"ledger": str(Path(args.ledger)) if args.ledger else None, "budgets": []})
    if ledger is None:
        return 0
    dataset_id = _dataset_id(args)
    rows = []
    for b in ledger.budgets():
        if (args.party and b.party != args.party) or (dataset_id and b.dataset_id != dataset_id):
            continue
        s = ledger.spent(b.party, b.dataset_id)
        rows.append((b, s))
    if args.json:
        out = [
            {
                "party": b.party,
                "dataset_id": b.dataset_id,
                "label": b.label,
                "budget": {"epsilon": b.epsilon, "delta": b.delta},
                "spent": {"epsilon": s.epsilon if not math.isinf(s.epsilon) else "inf", "delta": s.delta,
                          "releases": s.n_releases, "in_progress": s.n_pending, "accounting": s.accounting,
                          "units": list(s.units), "invalid_reasons": list(s.invalid)},
                "left_epsilon": max(b.epsilon - s.epsilon, 0.0),
            }
            for b, s in rows
        ]
        print(json.dumps({"ledger": str(ledger.path), "budgets": out}, indent=2))
        return 0
    print(f"ledger {ledger.path}")
    if not rows:
        print("  no budget set (dpadapt budget set --party P --data FILE --epsilon E --delta D)")
    for b, s in rows:
        left = max(b.epsilon - s.epsilon, 0.0)
        name = f" ({b.label})" if b.label else ""
        print(f"  {b.party} / dataset {short_id(b.dataset_id)}{name}")
        print(f"    budget : ε = {b.epsilon:.4g}, δ = {b.delta:.3g}")
        print(f"    spent  : {s.words()}")
        print(f"    left   : ε ≈ {left:.4g} at δ = {b.delta:.3g}" + ("  — EXHAUSTED" if left <= 0 else ""))
        if len(s.units) > 1:
            print(f"    note   : releases protect different units ({', '.join(s.units)}); the total holds for the weakest")
        if s.invalid:
            print("    warning: some releases carry guarantees that are NOT valid DP guarantees, so the true spend may be larger:")
            for r in s.invalid:
                print(f"      - {r}")
    if args.history:
        _print_history(ledger, args.party, dataset_id)
    return 0


def run_history(args) -> int:
    ledger = _existing_ledger(args, [])
    if ledger is None:
        return 0
    if args.json:
        entries = ledger.history(args.party, _dataset_id(args))
        print(json.dumps([e.to_dict() for e in entries], indent=2, default=str))
        return 0
    _print_history(ledger, args.party, _dataset_id(args))
    return 0


def _print_history(ledger: Ledger, party: str | None, dataset_id: str | None) -> None:
    from dpadapt.privacy.ledger import short_id  # here, not at import: `--help` stays fast

    entries = ledger.history(party, dataset_id)
    print(f"  {len(entries)} release(s) recorded")
    for e in entries:
        g = e.guarantee
        print(
            f"  {e.created}  {e.state:<9} {e.party}/{short_id(e.dataset_id)}  {e.method}/{e.kind}  "
            f"ε = {_eps(g.epsilon)}, δ = {g.delta:.3g}  {e.release_id[:12]}  {e.path or ''}"
        )
        if e.note:
            print(f"      {e.note}")
