"""Benchmarks of private discrepancy minimisation (Bassily, Mohri & Suresh, AISTATS 2023, Section 7).

Suites
------
``discrepancy``         the paper's synthetic study (d = 10, m = 1000, n ∈ {1000, 2000, 4000, 8000},
                        ε ∈ {1, 4, 16, ∞}, δ = 1/8000, K = 1000, λ = 0.001): Figure 1 (‖M(q̂)‖₂ of
                        noisy FW / MD) and Figure 2 (test MSE of public-only, single-stage,
                        two-stage FW, two-stage MD, oracle). Paper mode rows (published σ, argmin
                        selection) in the full run.
``discrepancy-mu``      ablation of the unspecified softmax parameter μ (FW, ‖M(q̂)‖₂).
``discrepancy-amazon``  Amazon msda400 pairs, ±1 labels with squared loss (accuracy), public-only,
                        non-private and private two-stage FW.

Unspecified choices (recorded in every row's ``params``): r = 1.5 with target clipping, Λ = 2,
μ = √(K log(m+n)/(8r̂⁴)) (Corollary 3's rule), r̂ = max source norm, second stage = exact
norm-constrained (‖w‖ ≤ Λ) q̂-weighted least squares, 10 000 fresh target test points, MSE,
single-stage output = last iterate, single-stage step η from Thm 4, MD = entropic.

Plots: ``python -m dpadapt.bench.suites.discrepancy plot RESULTS.json --out benchmarks/discrepancy/``.
"""

from __future__ import annotations

import argparse
import functools
import math
import time
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np
from sklearn.model_selection import StratifiedKFold

from dpadapt.bench.common import AMAZON_ABBREV, cached_pair
from dpadapt.bench.registry import BenchTask, RunOutcome, register_suite
from dpadapt.datasets.synthetic import make_bms_regression
from dpadapt.discrepancy import core, nonprivate, private
from dpadapt.discrepancy.stage2 import weighted_regression
from dpadapt.validation import PrivacyWarning

M, D, K, LAM, DELTA = 1000, 10, 1000, 1e-3, 1 / 8000
R, LAMBDA, N_TEST = 1.5, 2.0, 10_000
NS = (1000, 2000, 4000, 8000)
EPSILONS = (1.0, 4.0, 16.0, math.inf)

# Values read off the paper's plots (spec 03 §6); None where the plot gives no per-n value.
FIG1 = {
    "fw": {math.inf: (0.0, 0.0, 0.0, 0.0), 16.0: (0.27, 0.21, 0.16, 0.11), 4.0: (0.35, 0.31, 0.27, 0.22),
           1.0: (0.37, 0.37, 0.34, 0.32)},
    "md": {math.inf: (0.02, 0.02, 0.02, 0.02), 16.0: (0.36, None, None, 0.32), 4.0: (0.40, 0.38, 0.44, 0.32),
           1.0: (0.41, None, None, 0.38)},
}
FIG2 = {
    "public-only": {math.inf: (0.020,) * 4},
    "oracle": {math.inf: (0.000,) * 4},
    "single-stage": {math.inf: (0.000,) * 4, 16.0: (0.011, None, None, 0.007), 4.0: (0.016, None, None, 0.009),
                     1.0: (0.020, None, None, 0.014)},
    "two-stage-fw": {math.inf: (0.002,) * 4},
    "two-stage-md": {math.inf: (0.007,) * 4},
}
#: Why the private Fig. 2 gains are missing (one line; runs: benchmarks/paper_mode/discrepancy_fig2_scale.py and
#: benchmarks/discrepancy/discrepancy_fig2_readings.py, write-up benchmarks/discrepancy/README.md "Issue 31"). Fig. 1 reproduces,
#: so its lines carry none.
FIG2_CAUSE = ("measured: not the noise alone (the private q̂ is within 0.02–0.07 of Fig. 1's ‖M(q̂)‖ yet gains ≤ 7 %) nor "
              "the data scale; an intercept in the second stage lifts the gain to 24 % at n = 8000, ε = 16 "
              "(paper 65 %), a bias feature throughout breaks the non-private single stage; rest unexplained, candidates: "
              "the paper's data model (its public-only MSE is 20× ours), μ, r")
CHOICES = {"m": M, "d": D, "K": K, "lam": LAM, "delta": DELTA, "r": R, "Lambda": LAMBDA, "n_test": N_TEST,
           "mu": "sqrt(K log(m+n)/(8 r_hat^4))", "stage2": "exact norm-constrained weighted LS",
           "single_stage_selection": "last", "md_variant": "entropic"}


def _paper(table: dict, method: str, eps: float, n: int) -> float | None:
    values = table.get(method, {}).get(eps)
    return None if values is None else values[NS.index(n)] if n in NS else None


@functools.lru_cache(maxsize=64)
def _data(n: int, seed: int, noise_var: float | None = None) -> dict:
    return make_bms_regression(m=M, n=n, d=D, n_test=N_TEST, noise_var=noise_var, random_state=10_007 * seed + n)


def _mse(data: dict, w: np.ndarray) -> float:
    return float(np.mean((data["X_test"] @ w - data["y_test"]) ** 2))


def _delta(n: int, mode: str) -> float:
    """The paper's δ = 1/8000, except where sound mode refuses it (δ ≥ 1/n at n = 8000): there 1/(10 n)."""
    return DELTA if mode == "paper" or DELTA < 1.0 / n else 1.0 / (10 * n)


@functools.lru_cache(maxsize=1024)
def _cell(algorithm: str, n: int, eps: float, seed: int, mode: str = "sound", mu: float | None = None) -> dict:
    """Run one algorithm on one (n, ε, seed): ‖M(q̂)‖₂, test MSE, guarantee, wall time (cached)."""
    data = _data(n, seed)
    Xs, ys, Xt = data["Xs"], data["ys"], data["Xt"]
    rng = np.random.default_rng([seed, n, int(min(eps, 1e6)), ("fw", "md", "ss").index(algorithm), mode == "paper"])
    start = time.perf_counter()
    delta = _delta(n, mode)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)  # paper mode: δ = 1/8000 ≥ 1/n at n = 8000, the paper's choice
        if algorithm == "fw":
            res = private.noisy_frank_wolfe(Xt, Xs, eps, delta, r=R, K=K, lam=LAM, mu=mu, y_source=ys, Lambda=LAMBDA,
                                            random_state=rng, privacy_mode=mode)
        elif algorithm == "md":
            res = private.noisy_mirror_descent(Xt, Xs, eps, delta, r=R, K=K, lam=LAM, mu=mu, y_source=ys,
                                               Lambda=LAMBDA, random_state=rng, privacy_mode=mode)
        elif algorithm == "ss":
            res = private.single_stage_frank_wolfe(Xt, Xs, ys, eps, delta, r=R, Lambda=LAMBDA, K=K, mu=mu,
                                                   selection="last" if mode == "sound" else "paper_argmin",
                                                   random_state=rng, privacy_mode=mode)
        else:
            raise ValueError(algorithm)
    seconds = time.perf_counter() - start
    M0 = core.second_moment(Xt, R)
    return {"norm": core.spectral_norm(res.q, M0, Xs), "mse": _mse(data, res.w), "guarantee": res.guarantee,
            "seconds": seconds, "mu": res.details["mu"]}


def _guarantees(g) -> dict:
    return {} if math.isinf(g.epsilon) else {"target": g}


def _fig1_runner(algorithm: str, n: int, eps: float, mode: str, mu: float | None = None):
    def run(seed: int) -> RunOutcome:
        c = _cell(algorithm, n, eps, seed, mode, mu)
        return RunOutcome(c["norm"], _guarantees(c["guarantee"]),
                          {"algo_seconds": c["seconds"], "test_mse": c["mse"], "mu": c["mu"]})
    return run


def _fig2_runner(method: str, n: int, eps: float, mode: str):
    def run(seed: int) -> RunOutcome:
        if method in ("public-only", "oracle"):
            data = _data(n, seed)
            start = time.perf_counter()
            if method == "public-only":
                w = weighted_regression(np.full(M, 1.0 / M), data["Xs"], data["ys"], Lambda=LAMBDA)
            else:
                w = weighted_regression(np.full(n, 1.0 / n), data["Xt"], data["yt"], Lambda=LAMBDA)
            return RunOutcome(_mse(data, w), {}, {"algo_seconds": time.perf_counter() - start})
        algorithm = {"single-stage": "ss", "two-stage-fw": "fw", "two-stage-md": "md"}[method]
        c = _cell(algorithm, n, eps, seed, mode)
        return RunOutcome(c["mse"], _guarantees(c["guarantee"]),
                          {"algo_seconds": c["seconds"], "spectral_norm": c["norm"], "mu": c["mu"]})
    return run


def _mode(eps: float, paper: bool) -> str:
    return "non-private" if math.isinf(eps) else ("paper" if paper else "sound")


@register_suite("discrepancy", "Bassily-Mohri-Suresh synthetic study: Fig. 1 (‖M(q̂)‖₂, FW/MD) and Fig. 2 (test MSE)")
def build(quick: bool, epsilons=None) -> list[BenchTask]:
    ns = (1000, 8000) if quick else NS
    eps_list = tuple(epsilons) if epsilons else ((4.0, math.inf) if quick else EPSILONS)
    tasks: list[BenchTask] = []
    for n in ns:
        for eps in eps_list:
            variants = [False] if (quick or math.isinf(eps)) else [False, True]
            for paper in variants:
                mode = _mode(eps, paper)
                algo_mode = "paper" if paper else "sound"
                for alg in ("fw", "md"):
                    tasks.append(BenchTask(
                        suite="discrepancy", task=f"fig1:n={n}", method=f"{alg}-spectral-norm", mode=mode,
                        run=_fig1_runner(alg, n, eps, algo_mode), epsilon=eps, delta=_delta(n, algo_mode), metric="spectral_norm",
                        paper_value=None if paper else _paper(FIG1, alg, eps, n), params={**CHOICES, "n": n},
                        paper_row=f"Fig.1 {alg}"))
                methods = ("single-stage", "two-stage-fw", "two-stage-md")
                if math.isinf(eps):
                    methods = ("public-only", "oracle") + methods
                for method in methods:
                    tasks.append(BenchTask(
                        suite="discrepancy", task=f"fig2:n={n}", method=method, mode=mode,
                        run=_fig2_runner(method, n, eps, algo_mode), epsilon=eps, delta=_delta(n, algo_mode), metric="test_mse",
                        paper_value=None if paper else _paper(FIG2, method, eps, n), params={**CHOICES, "n": n},
                        paper_row=f"Fig.2 {method}", cause=FIG2_CAUSE if method == "single-stage" else None))
    return tasks


@register_suite("discrepancy-mu", "Ablation of the softmax parameter μ for noisy Frank-Wolfe (‖M(q̂)‖₂)")
def build_mu(quick: bool, epsilons=None) -> list[BenchTask]:
    ns = (1000,) if quick else (1000, 8000)
    eps_list = tuple(epsilons) if epsilons else ((16.0,) if quick else (4.0, 16.0))
    mus = (2.0, 5.0, None) if quick else (1.0, 2.0, 5.0, 10.0, None)
    return [
        BenchTask(suite="discrepancy-mu", task=f"fig1:n={n}", method=f"fw-mu={'cor3' if mu is None else f'{mu:g}'}",
                  mode="sound", run=_fig1_runner("fw", n, eps, "sound", mu), epsilon=eps, delta=_delta(n, "sound"),
                  metric="spectral_norm", paper_value=_paper(FIG1, "fw", eps, n), params={**CHOICES, "n": n, "mu": mu})
        for n in ns for eps in eps_list for mu in mus
    ]


# -- Amazon msda400 -----------------------------------------------------------------------------

AMAZON_PAIRS = (("books", "kitchen"), ("kitchen", "books"), ("dvd", "electronics"), ("electronics", "dvd"))
AMAZON_K = 200
RIDGES = (1e-5, 1e-4, 1e-3, 1e-2)


@functools.lru_cache(maxsize=16)
def _amazon(source: str, target: str):
    """The pair, ±1 source labels and a ridge chosen by 5-fold CV on the PUBLIC source only."""
    pair = cached_pair("msda400", source, target).dense()
    signed = np.where(pair.ys == 1, 1.0, -1.0)
    folds = StratifiedKFold(5, shuffle=True, random_state=0).split(pair.Xs, pair.ys)
    scores = defaultdict(list)
    for tr, va in folds:
        for ridge in RIDGES:
            w = weighted_regression(np.full(len(tr), 1.0 / len(tr)), pair.Xs[tr], signed[tr], ridge=ridge)
            scores[ridge].append(np.mean((pair.Xs[va] @ w > 0) == (signed[va] > 0)))
    ridge = max(RIDGES, key=lambda a: np.mean(scores[a]))
    return pair, signed, ridge


def _amazon_runner(source: str, target: str, method: str, eps: float):
    def run(seed: int) -> RunOutcome:
        pair, signed, ridge = _amazon(source, target)
        start = time.perf_counter()
        m = len(pair.Xs)
        if method == "public-only":
            q, g = np.full(m, 1.0 / m), None
        elif method == "two-stage-fw":
            res = private.noisy_frank_wolfe(pair.Xt, pair.Xs, eps, 1e-5, r=1.0, K=AMAZON_K, lam=LAM,
                                            random_state=np.random.default_rng([seed, int(min(eps, 1e6))]))
            q, g = res.q, res.guarantee
        elif method == "two-stage-np":
            M0 = core.second_moment(pair.Xt, 1.0)
            mu = core.default_mu(AMAZON_K, m, len(pair.Xt), core.source_radius(pair.Xs))
            q, g = nonprivate.minimize_discrepancy(M0, pair.Xs, mu, LAM, max_iter=AMAZON_K), None
        else:
            raise ValueError(method)
        w = weighted_regression(q, pair.Xs, signed, ridge=ridge)
        acc = float(np.mean((pair.Xt_test @ w > 0) == (pair.yt_test == 1)))
        target_signed = np.where(pair.yt_test == 1, 1.0, -1.0)
        M0 = core.second_moment(pair.Xt, 1.0)
        extra = {"algo_seconds": time.perf_counter() - start, "ridge": ridge,
                 "test_mse_pm1": float(np.mean((pair.Xt_test @ w - target_signed) ** 2)),
                 "spectral_norm": core.spectral_norm(q, M0, pair.Xs),
                 "effective_support": float(1.0 / np.sum(q**2))}
        return RunOutcome(acc, {} if g is None or math.isinf(g.epsilon) else {"target": g}, extra)
    return run


@register_suite("discrepancy-amazon", "Amazon msda400: ±1 squared-loss classification via (private) discrepancy weights")
def build_amazon(quick: bool, epsilons=None) -> list[BenchTask]:
    pairs = AMAZON_PAIRS[:1] if quick else AMAZON_PAIRS
    eps_list = tuple(epsilons) if epsilons else ((4.0,) if quick else (1.0, 4.0, 16.0))
    tasks = []
    for s, t in pairs:
        name = f"msda400:{AMAZON_ABBREV[s]}->{AMAZON_ABBREV[t]}"
        params = {"K": AMAZON_K, "r": 1.0, "delta": 1e-5, "lam": LAM, "stage2": "ridge chosen by source CV"}
        for method in ("public-only", "two-stage-np"):
            tasks.append(BenchTask("discrepancy-amazon", name, method, "non-private", _amazon_runner(s, t, method, math.inf),
                                   metric="accuracy", params=params))
        for eps in eps_list:
            tasks.append(BenchTask("discrepancy-amazon", name, "two-stage-fw", "sound", _amazon_runner(s, t, "two-stage-fw", eps),
                                   epsilon=eps, delta=1e-5, metric="accuracy", params=params))
    return tasks


# -- plots ---------------------------------------------------------------------------------------


def _stats(rows, task_prefix, method, mode_eps):
    out = {}
    for r in rows:
        if r.get("error") or not r["task"].startswith(task_prefix) or r["method"] != method:
            continue
        eps = math.inf if r["epsilon_target"] in ("inf", math.inf) else float(r["epsilon_target"])
        if (r["mode"], eps) != mode_eps(eps):
            continue
        n = int(r["task"].split("=")[1])
        out.setdefault((eps, n), []).append(float(r["value"]))
    return out


def plot_figures(rows: list[dict], out_dir: str | Path) -> list[Path]:
    """Figure 1 and Figure 2 of the paper from result rows (sound/non-private rows; paper values as ×)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    sound = lambda eps: ("non-private" if math.isinf(eps) else "sound", eps)
    colours = {1.0: "tab:red", 4.0: "tab:orange", 16.0: "tab:green", math.inf: "tab:blue"}
    paths = []

    fig, ax = plt.subplots(figsize=(6, 4.2))
    for alg, style in (("fw", "-"), ("md", ":")):
        stats = _stats(rows, "fig1", f"{alg}-spectral-norm", sound)
        for eps in EPSILONS:
            ns = sorted(n for e, n in stats if e == eps)
            if not ns:
                continue
            mean = [np.mean(stats[(eps, n)]) for n in ns]
            std = [np.std(stats[(eps, n)]) for n in ns]
            label = f"{alg.upper()} ε={'∞' if math.isinf(eps) else f'{eps:g}'}"
            ax.errorbar(ns, mean, yerr=std, linestyle=style, marker="o", ms=3, color=colours[eps], label=label, capsize=2)
            paper = [(n, _paper(FIG1, alg, eps, n)) for n in ns]
            ax.scatter([n for n, v in paper if v is not None], [v for _, v in paper if v is not None], marker="x",
                       color=colours[eps])
    ax.set_xscale("log", base=2)
    ax.set_xlabel("n (private target samples)")
    ax.set_ylabel("‖M(q̂)‖₂")
    ax.set_title("Fig. 1: noisy FW (solid) vs MD (dotted); × = paper")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    paths.append(out_dir / "discrepancy_fig1.png")
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)

    fig, axes = plt.subplots(1, 4, figsize=(16, 4), sharey=True)
    styles = {"public-only": ("k", "--"), "oracle": ("grey", "-."), "single-stage": ("tab:blue", "-"),
              "two-stage-fw": ("tab:green", "--"), "two-stage-md": ("tab:red", ":")}
    for ax, eps in zip(axes, EPSILONS):
        for method, (colour, style) in styles.items():
            stats = _stats(rows, "fig2", method, lambda e: ("non-private", math.inf))
            if method not in ("public-only", "oracle"):
                stats = _stats(rows, "fig2", method, sound)
            key_eps = math.inf if method in ("public-only", "oracle") else eps
            ns = sorted(n for e, n in stats if e == key_eps)
            if not ns:
                continue
            ax.errorbar(ns, [np.mean(stats[(key_eps, n)]) for n in ns], yerr=[np.std(stats[(key_eps, n)]) for n in ns],
                        color=colour, linestyle=style, marker="o", ms=3, label=method, capsize=2)
            paper = [(n, _paper(FIG2, method, key_eps, n)) for n in ns]
            ax.scatter([n for n, v in paper if v], [v for _, v in paper if v], marker="x", color=colour)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")  # the paper's MSEs are ~20× ours (see benchmarks/discrepancy/README.md); paper 0.000 not drawn
        ax.set_title(f"ε = {'∞' if math.isinf(eps) else f'{eps:g}'}")
        ax.set_xlabel("n")
    axes[0].set_ylabel("test MSE")
    axes[0].legend(fontsize=7)
    fig.suptitle("Fig. 2: test MSE (× = paper)")
    fig.tight_layout()
    paths.append(out_dir / "discrepancy_fig2.png")
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)
    return paths


def _fmt(values: list[float] | None, digits: int = 3) -> str:
    if not values:
        return "—"
    return f"{np.mean(values):.{digits}f}±{np.std(values):.{digits}f}"


def _paper_fmt(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def markdown_tables(rows: list[dict]) -> str:
    """Figure 1 / Figure 2 tables (measured mean±std over seeds beside the paper), plus wall times."""
    def eps_of(r):
        return math.inf if r["epsilon_target"] in ("inf", math.inf) else float(r["epsilon_target"])

    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        if not r.get("error"):
            groups[(r["task"], r["method"], r["mode"], eps_of(r))].append(r)

    def vals(task, method, mode, eps, key="value"):
        return [float(r[key]) for r in groups.get((task, method, mode, eps), [])]

    ns = sorted({int(t.split("=")[1]) for t, *_ in groups if t.startswith("fig")})
    lines = ["### Figure 1: ‖M(q̂)‖₂ (mean±std over seeds; paper value read off the plot)", "",
             "| n | ε | FW sound | FW paper-mode | FW paper | MD sound | MD paper-mode | MD paper | s/run FW | s/run MD |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for n in ns:
        for eps in EPSILONS:
            mode = "non-private" if math.isinf(eps) else "sound"
            t = f"fig1:n={n}"
            fw, md = vals(t, "fw-spectral-norm", mode, eps), vals(t, "md-spectral-norm", mode, eps)
            if not fw and not md:
                continue
            lines.append(
                f"| {n} | {'∞' if math.isinf(eps) else f'{eps:g}'} | {_fmt(fw)} | {_fmt(vals(t, 'fw-spectral-norm', 'paper', eps))} "
                f"| {_paper_fmt(_paper(FIG1, 'fw', eps, n), 2)} | {_fmt(md)} | {_fmt(vals(t, 'md-spectral-norm', 'paper', eps))} "
                f"| {_paper_fmt(_paper(FIG1, 'md', eps, n), 2)} "
                f"| {_fmt(vals(t, 'fw-spectral-norm', mode, eps, 'algo_seconds'), 2)} "
                f"| {_fmt(vals(t, 'md-spectral-norm', mode, eps, 'algo_seconds'), 2)} |")
    lines += ["", "### Figure 2: test MSE (mean±std; paper value in brackets)", "",
              "| n | ε | public-only | oracle | single-stage | single-stage paper-mode (argmin) | two-stage FW | two-stage MD | s/run SS |",
              "|---|---|---|---|---|---|---|---|---|"]
    for n in ns:
        t = f"fig2:n={n}"
        for eps in EPSILONS:
            mode = "non-private" if math.isinf(eps) else "sound"
            cells = []
            for method in ("public-only", "oracle", "single-stage"):
                e = math.inf if method in ("public-only", "oracle") else eps
                v = vals(t, method, "non-private" if math.isinf(e) else mode, e)
                cells.append(f"{_fmt(v, 4)} [{_paper_fmt(_paper(FIG2, method, e, n))}]" if v else "—")
            cells.append(_fmt(vals(t, "single-stage", "paper", eps), 4))
            for method in ("two-stage-fw", "two-stage-md"):
                v = vals(t, method, mode, eps)
                cells.append(f"{_fmt(v, 4)} [{_paper_fmt(_paper(FIG2, method, eps, n))}]" if v else "—")
            if not any(c != "—" for c in cells):
                continue
            cells.append(_fmt(vals(t, "single-stage", mode, eps, "algo_seconds"), 2))
            lines.append(f"| {n} | {'∞' if math.isinf(eps) else f'{eps:g}'} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from dpadapt.bench.runner import load_rows

    parser = argparse.ArgumentParser(prog="python -m dpadapt.bench.suites.discrepancy")
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("plot", help="draw Figures 1 and 2 from a results JSON")
    p.add_argument("results")
    p.add_argument("--out", default="benchmarks/discrepancy")
    t = sub.add_parser("table", help="print the Figure 1 / Figure 2 tables (markdown) from a results JSON")
    t.add_argument("results")
    args = parser.parse_args(argv)
    rows = load_rows(args.results)
    if args.cmd == "table":
        print(markdown_tables(rows))
        return 0
    for path in plot_figures(rows, args.out):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
