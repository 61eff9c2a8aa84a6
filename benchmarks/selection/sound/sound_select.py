"""Issue 23, the selection step: from the development-pair results of ``sound_dev.py`` to the rule.

Reads the dev JSON lines (development pairs only) and, per public feature type and per ε of the grid
(None, 1, 2, 4, 8), picks the SSP candidate (space, k, ridge constants, receiver classifier ``lda`` or
``ncm``) that MAXIMISES THE WORST GAP to the best DP source-only baseline (max of DP-NCM, DP-LR at
the same ε, δ) over the development pairs of that feature type (ties: the larger mean accuracy); at
ε = None the gap is to the non-private source-only logistic regression (``lr_cv``). Then, for the
guarded refinement, the agreement threshold τ ∈ {0.8, 0.85, 0.9, 0.95, off} with the largest worst
change over the same rows (ties: larger mean change). Usage:
``python benchmarks/selection/sound/sound_select.py dev1.jsonl,dev2.jsonl [portfolio.jsonl]``.

Round 2 (the portfolio of issue 23's Build item 1): with a second argument (the output of
``sound_dev_portfolio.py``) the candidates also include ``design:classstats`` (today's class-statistics
design, merged by pair, ε and seed), ``design:ncm`` and ``design:dplr`` (the rows' own DP-NCM and DP-LR
columns: the DP source-only classifiers on the full mapped features). The criterion is unchanged; a cell
whose choice IS a DP source-only classifier has gap 0 to it by construction (the default then never
loses to it).

Round 3 (``--round3``, on the output of ``sound_dev_round3.py``, which holds every candidate, the
portfolio designs included): the criterion is the worst over the dev pairs of (the candidate's WORST
SEED − the best DP source-only MEAN); the receiver classifier ``ridge`` (keys ``ssp:SPACE:K:ridge:A:F``)
joins ``lda`` and ``ncm``.
"""

from __future__ import annotations

import collections
import json
import sys

import numpy as np

FEATURE_TYPE = {"googlenet1024": "dense", "surf": "counts", "bow5000": "counts", "heart": "table"}
TAUS = (0.8, 0.85, 0.9, 0.95, 1.01)


#: the Choice fields of the round-2 designs (their own defaults: nothing of them is tuned here)
DESIGN_FIELDS = {
    "classstats": {"space": "pca", "k": 20, "norm": "l2", "classifier": "prototypes", "refinement": "ot"},
    "ncm": {"space": "features", "k": 0, "norm": "l2", "classifier": "ncm", "refinement": "none"},
    "dplr": {"space": "features", "k": 0, "norm": "l2", "classifier": "lr", "refinement": "none"},
}


def parse(key: str, ft: str, tau: float) -> dict:
    """A candidate key ``ssp:SPACE:K:SCALE:FLOOR``, ``ssp:SPACE:K:ncm`` or ``design:NAME`` as the fields of a rule Choice."""
    parts = key.split(":")
    if parts[0] == "design":
        return {"design": parts[1], **DESIGN_FIELDS[parts[1]], "ridge_scale": 0.0, "ridge_floor": 0.0, "min_agreement": 1.0}
    space, k = parts[1], int(parts[2])
    norm = "box" if space.endswith("-box") else "l2"
    ncm = parts[3] == "ncm"
    clf = "ncm" if ncm else ("ridge" if parts[3] == "ridge" else "lda")
    ab = parts[4:6] if clf == "ridge" else parts[3:5]
    return {"design": "ssp", "space": space.removesuffix("-box"), "k": k, "norm": norm, "classifier": clf,
            "ridge_scale": 0.0 if ncm else float(ab[0]), "ridge_floor": 0.0 if ncm else float(ab[1]),
            "refinement": "none" if tau > 1 else "guarded", "min_agreement": min(tau, 1.0)}


def main(paths: str, portfolio: str = "", round3: bool = False) -> None:
    rows = [json.loads(line) for p in paths.split(",") for line in open(p)]
    if round3:
        for r in rows:
            r["design:ncm"], r["design:dplr"] = r["ncm"], r["dplr"]
    if portfolio:
        extra = {(r["pair"], r["eps"], r["seed"]): r for r in (json.loads(line) for line in open(portfolio))}
        for r in rows:
            r["design:ncm"], r["design:dplr"] = r["ncm"], r["dplr"]
            r.update({k: v for k, v in extra[(r["pair"], r["eps"], r["seed"])].items() if k.startswith("design:")})
    rule: dict = {}
    guard: dict = collections.defaultdict(lambda: collections.defaultdict(list))
    by = collections.defaultdict(list)
    for r in rows:
        by[(FEATURE_TYPE[r["pair"].split(":")[0]], r["eps"])].append(r)
    for (ft, eps), rs in sorted(by.items(), key=lambda kv: (kv[0][0], kv[0][1] is None, kv[0][1] or 0)):
        pairs = sorted({r["pair"] for r in rs})
        cands = sorted({k for r in rs for k in r if k.startswith(("ssp:", "design:")) and not k.endswith((":agree", ":ref"))})
        scored = []
        for c in cands:
            gaps, accs = [], []
            for pair in pairs:
                pr = [r for r in rs if r["pair"] == pair and c in r]
                if not pr:
                    break
                acc = min(r[c] for r in pr) if round3 else np.mean([r[c] for r in pr])
                base = np.mean([r["lr_cv"] for r in pr]) if eps is None and "lr_cv" in pr[0] else max(np.mean([r["ncm"] for r in pr]), np.mean([r["dplr"] for r in pr]))
                gaps.append(acc - base)
                accs.append(np.mean([r[c] for r in pr]))
            else:
                scored.append((min(gaps), np.mean(accs), c, gaps))
        scored.sort(reverse=True)
        worst, mean, best, gaps = scored[0]
        rule[(ft, eps)] = best
        print(f"{ft:7s} eps={eps!s:5s} best={best:32s} worst gap {100 * worst:+.1f} mean acc {100 * mean:.1f}  gaps " + " ".join(f"{100 * g:+.1f}" for g in gaps))
        for tau in TAUS:
            ch = []
            for space in sorted({k.rsplit(":", 1)[0] for k in cands if k.endswith(":ncm")}):
                for r in rs:
                    if f"{space}:ref" in r:
                        keep = r[f"{space}:agree"] >= tau
                        ch.append((space, (r[f"{space}:ref"] - r[f"{space}:1.0:0.01"]) if keep else 0.0))
            if best.startswith("design:"):
                continue  # the guard belongs to the SSP design only
            sp = best.split(":")[1:3]
            mine = [d for s, d in ch if s == f"ssp:{sp[0]}:{sp[1]}"]
            guard[ft][tau] += mine
            if mine:
                print(f"          guard τ={tau:.2f} on {sp}: mean {100 * np.mean(mine):+.2f} worst {100 * min(mine):+.1f}")
    taus = {ft: max(TAUS, key=lambda t: (min(g[t]), np.mean(g[t]))) for ft, g in guard.items() if all(g[t] for t in TAUS)}
    print("RULE = {")
    for (ft, eps), key in sorted(rule.items(), key=lambda kv: (kv[0][0], kv[0][1] is None, kv[0][1] or 0)):
        print(f"    ({ft!r}, {eps!r}): {parse(key, ft, taus.get(ft, 1.01))!r},")
    print("}")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--round3"]
    main(args[0], args[1] if len(args) > 1 else "", round3="--round3" in sys.argv)
