"""Issue 37, item 3: the discriminative finish where n·ε is large, on the LARGE development pairs only.

    python benchmarks/sound/finish.py run OUT.jsonl --seeds 5 [--workers 2] [--pairs bow5000 physionet]
    python benchmarks/sound/finish.py dplr OUT.jsonl --seeds 5          # DP-LR on PhysioNet, three units pooled
    python benchmarks/sound/finish.py choose OUT.jsonl DPLR.jsonl       # the rule of README.md (issue 37, item 3)
    python benchmarks/sound/finish.py report OUT.jsonl --seeds 3        # the bow5000 report pairs, once, after the choice
    python benchmarks/sound/finish.py single OUT.jsonl --seeds 5        # PhysioNet single sources the trigger reaches (dev)
    python benchmarks/sound/finish.py oracle OUT.jsonl                  # diagnostic: LR on the source rows, same basis

``run``: per pair, ε ∈ {1, 4, 8} (``--seeds`` seeds, numpy's reproducible sampler) and None, one sound release
(the default request) and every candidate finish of ``README.md`` computed from THAT release and the receiver's
rows (so differences between candidates are paired): ``none`` (the default model), ``mo-0.25`` and ``mo-1``
(mean-operator logistic regression, ridge ρ·λ_LDA), ``self`` (logistic regression on the receiver's rows labelled
by the default model) and, round 2, ``lda-mp`` (the discriminant with :func:`dpadapt.sound.design.sampling_ridge`,
what the library now applies where the trigger holds). The logistic candidates are defined here only (they lost).
Each row records the public trigger quantities n, K, σ_eff and q = n/(K σ_eff).
``library`` is the model ``SoundDA`` returns (with the finish where the library applies it); ``report`` runs the
same on the bow5000 report pairs (ε ∈ {1, 2, 4, 8} and None), so ``none`` against ``library`` is paired there too.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import dataclasses
import json
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.special import logsumexp

from dpadapt.bench.suites import sound_rows as R
from dpadapt.sound import SoundDA, calibrate, receiver
from dpadapt.sound import design as rule
from dpadapt.sound.receiver import SoundModel, combine
from dpadapt.sound.request import Request
from select_design import _init_worker, metrics  # this folder's

EPSILONS = (1.0, 4.0, 8.0, None)
LARGE_BOW = ("bow5000:K->B", "bow5000:D->E", "bow5000:B->K", "bow5000:E->D")
CANDIDATES = ("none", "mo-0.25", "mo-1", "mo-shift-0.25", "mo-shift-1", "mo-coral-0.25", "self", "lda-mp")


def _load(task: str):
    """(sources [(Xs, ys)], Xt, Xt_test, yt_test, metric, δ) of a large development pair."""
    if task.startswith("physionet:"):
        source, target = task.split(":")[1].split("->")
        units = [u for u in R.PHYSIONET_UNITS if u != target] if source == "3" else [source]
        pairs = [R._physionet_pair(u, target) for u in units]
        return [(p.Xs, p.ys) for p in pairs], pairs[0].Xt, pairs[0].Xt_test, pairs[0].yt_test, "roc_auc", None
    spec = next(p for p in (*R.DEV_PAIRS, *R.REPORT_PAIRS) if p.task == task)
    d = spec.load()
    return [(d.Xs, d.ys)], d.Xt, d.Xt_test, d.yt_test, "accuracy", spec.delta(d.Xs.shape[0])


def _tasks(filters: list[str]) -> list[str]:
    tasks = [*LARGE_BOW, *(f"physionet:3->{u}" for u in R.PHYSIONET_UNITS)]
    return [t for t in tasks if not filters or any(f in t for f in filters)]


def source_surrogate(st: receiver.Statistics, Z: np.ndarray, *, covariance: bool = False) -> np.ndarray:
    """The receiver's rows moved to the source's released moments: their mean to the released mean Σ_c S_c / n
    and (``covariance``) their covariance to the released one (PSD part, CORAL's map), for the label-free part."""
    c = np.maximum(np.asarray(st.counts, dtype=np.float64), 1.0)
    n = float(c.sum())
    m_s = st.sums.sum(axis=0) / n
    Zc = Z - Z.mean(axis=0)
    if covariance and st.second is not None:
        vals_s, vecs_s = receiver._psd_eigh(st.second / n - np.outer(m_s, m_s))
        vals_t, vecs_t = receiver._psd_eigh(Zc.T @ Zc / max(Z.shape[0], 1))
        floor = 1e-3 * max(float(vals_t.mean()), 1e-12)
        Zc = Zc @ ((vecs_t / np.sqrt(vals_t + floor)) @ vecs_t.T) @ ((vecs_s * np.sqrt(vals_s)) @ vecs_s.T)
    return Zc + m_s


def mean_operator_logistic(st: receiver.Statistics, Z: np.ndarray, lam: float, *, max_iter: int = 500
                           ) -> tuple[np.ndarray, np.ndarray]:
    """(W, b) of multinomial logistic regression from the released class sums and counts, with the label-free part
    of the loss on the receiver's rows ``Z`` (the mean-operator factorisation; ``docs/design/sound-design.md``).

    The source's loss Σ_i [lse(W z_i + b) − (W z_i + b)_{y_i}] is Σ_i lse(W z_i + b) − Σ_c (w_c·S_c + b_c n_c): the
    labels enter only through the class sums S_c and counts n_c (Quadrianto et al., JMLR 2009; Patrini et al.,
    ICML 2016), which the release holds. The label-free part is taken as (n/n_t)·Σ_j lse(W z_j + b) over the
    receiver's n_t rows (n = Σ_c n_c, the noisy counts floored at 1), and ``lam``/2·‖W‖² keeps the noise of the
    sums from being fitted. Convex; minimised by L-BFGS from zero. Post-processing: no privacy cost.
    """
    from scipy.optimize import minimize

    c = np.maximum(np.asarray(st.counts, dtype=np.float64), 1.0)
    S = np.asarray(st.sums, dtype=np.float64)
    K, k = S.shape
    Z = np.asarray(Z, dtype=np.float64)
    scale = float(c.sum()) / max(Z.shape[0], 1)

    def loss(theta):
        W, b = theta[: K * k].reshape(K, k), theta[K * k:]
        s = Z @ W.T + b
        lse = logsumexp(s, axis=1)
        P = np.exp(s - lse[:, None])
        f = scale * lse.sum() - np.sum(W * S) - b @ c + 0.5 * lam * np.sum(W * W)
        gW = scale * (P.T @ Z) - S + lam * W
        gb = scale * P.sum(axis=0) - c
        return f, np.concatenate([gW.ravel(), gb])

    b0 = np.log(c / c.sum())
    res = minimize(loss, np.concatenate([np.zeros(K * k), b0]), jac=True, method="L-BFGS-B",
                   options={"maxiter": max_iter})
    W, b = res.x[: K * k].reshape(K, k), res.x[K * k:]
    return W, b - b.mean()


def _model(req: Request, st, W, b, Z) -> SoundModel:
    model = SoundModel(np.asarray(req.classes), req.log1p, req.mean, req.components, W, b, "discriminant",
                       {"source_prior": receiver.class_prior(st.counts).tolist()})
    return calibrate.at_target_prior(model, Z)


def candidates(est: SoundDA, Xt, only_round2: bool = False) -> dict:
    """Every candidate finish from the estimator's one release and the receiver's rows."""
    req = Request.from_release(est.request_, n_features=Xt.shape[1])
    st = combine(req, est.releases_)
    Z = req.row_map()(Xt)
    out = {"library": est.model_, "none": est.model_}
    if req.design["design"] != "discriminant":
        return out
    lam = rule.discriminant_ridge(st.sigma, st.n, req.k)
    W, b = receiver.discriminant(st, lam)  # the default without the finish, from the same release
    W, b, _ = calibrate.calibrate("discriminant", st, W, b)
    out["none"] = _model(req, st, W, b, Z)
    W, b = receiver.discriminant(st, rule.sampling_ridge(st.sigma, st.n, req.k))  # round 2: the ridge of both errors
    W, b, _ = calibrate.calibrate("discriminant", st, W, b)
    out["lda-mp"] = _model(req, st, W, b, Z)
    if only_round2:
        return out
    for rho in (0.25, 1.0):
        W, b = mean_operator_logistic(st, Z, rho * lam)
        out[f"mo-{rho:g}"] = _model(req, st, W, b, Z)
        W, b = mean_operator_logistic(st, source_surrogate(st, Z), rho * lam)
        out[f"mo-shift-{rho:g}"] = _model(req, st, W, b, Z)
    W, b = mean_operator_logistic(st, source_surrogate(st, Z, covariance=True), 0.25 * lam)
    out["mo-coral-0.25"] = _model(req, st, W, b, Z)
    idx = np.searchsorted(req.classes, out["none"].predict(Xt))
    onehot = np.eye(len(req.classes))[idx]
    scale = float(np.maximum(st.counts, 1.0).sum()) / Z.shape[0]
    pseudo = dataclasses.replace(st, sums=scale * onehot.T @ Z, counts=np.maximum(scale * onehot.sum(axis=0), 1e-9))
    W, b = mean_operator_logistic(pseudo, Z, 0.25 * lam)
    out["self"] = _model(req, st, W, b, Z)
    return out


def _fit(sources, Xt, classes, eps, delta, seed) -> SoundDA:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SoundDA(epsilon=eps, delta=delta if eps is not None else None, classes=classes, random_state=seed,
                       reproducible_noise=True).fit_domains([X for X, _ in sources], [y for _, y in sources], Xt)


def run_one(task: str, eps, seeds: int, only_round2: bool = False) -> list[dict]:
    sources, Xt, Xtest, ytest, metric, delta = _load(task)
    classes = tuple(range(len(np.unique(np.concatenate([y for _, y in sources])))))
    rows = []
    for seed in range(seeds if eps is not None else 1):
        t = time.perf_counter()
        est = _fit(sources, Xt, classes, eps, delta, seed)
        d = est.design_
        q = math.inf if d["sigma"] == 0 else d["n"] / (d["K"] * d["sigma"])
        models = candidates(est, Xt, only_round2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            scores = {name: 100 * metrics(m, Xtest, ytest)[metric] for name, m in models.items()}
        rows.append({"task": task, "epsilon": eps, "seed": seed, "metric": metric, "design": d["design"], "k": d["k_rule"],
                     "n": d["n"], "K": d["K"], "sigma": d["sigma"], "q": q, "finish": est.model_.details.get("finish"),
                     **scores, "seconds": time.perf_counter() - t})
    return rows


def run(out: str, seeds: int, filters: list[str], workers: int, tasks: list[str] | None = None, epsilons=EPSILONS,
        only_round2: bool = False) -> int:
    jobs = [(t, e, seeds, only_round2) for t in (tasks or _tasks(filters)) for e in epsilons]
    with open(out, "a") as f, cf.ProcessPoolExecutor(workers, initializer=_init_worker) as pool:
        for rows in pool.map(run_one, *zip(*jobs)):
            for row in rows:
                f.write(json.dumps(row) + "\n")
            f.flush()
            print(rows[0]["task"], rows[0]["epsilon"], {c: round(float(np.mean([r[c] for r in rows])), 1)
                                                        for c in rows[0] if c in (*CANDIDATES, "library")}, flush=True)
    return 0


def dplr(out: str, seeds: int) -> int:
    """DP-LR (the matrix's ``dp-lr`` row) on PhysioNet, the three other units pooled as one source, ROC-AUC."""
    from sklearn.metrics import roc_auc_score

    from dpadapt.classstats import DPLogisticRegression

    with open(out, "a") as f:
        for task in _tasks(["physionet"]):
            sources, Xt, Xtest, ytest, _, _ = _load(task)
            Xs = np.vstack([X for X, _ in sources])
            ys = np.concatenate([y for _, y in sources])
            for eps in (1.0, 4.0, 8.0):
                for seed in range(seeds):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        m = DPLogisticRegression(epsilon=eps, delta=1.0 / (10 * len(ys)), classes=(0, 1), feature_type="dense",
                                                 random_state=seed, reproducible_noise=True).fit_domains(Xs, ys)
                    auc = 100 * float(roc_auc_score(ytest == 1, m.predict_proba(Xtest)[:, 1]))
                    f.write(json.dumps({"task": task, "row": "dp-lr", "epsilon": eps, "seed": seed, "roc_auc": auc}) + "\n")
            print(task, flush=True)
    return 0


def oracle(out: str, filters: list[str]) -> int:
    """Diagnostic, not a candidate (it reads the source rows): in the basis each ε's request asks for, the noise-free
    discriminant against logistic regression fitted on the source's own mapped rows (C by 3-fold CV on the source).
    The second is the best any finish of the same basis could reach; their gap bounds what item 3 can win."""
    from sklearn.linear_model import LogisticRegressionCV

    with open(out, "a") as f:
        for task in _tasks(filters):
            sources, Xt, Xtest, ytest, metric, delta = _load(task)
            classes = tuple(range(len(np.unique(np.concatenate([y for _, y in sources])))))
            for eps in (4.0, 8.0, None):
                est = _fit(sources, Xt, classes, eps, delta, 0)
                req = Request.from_release(est.request_, n_features=Xt.shape[1])
                Zs = np.vstack([req.row_map()(X) for X, _ in sources])
                ys = np.concatenate([y for _, y in sources])
                onehot = np.eye(len(classes))[ys]
                st = receiver.Statistics(onehot.T @ Zs, onehot.sum(axis=0), Zs.T @ Zs, 0.0, float(len(ys)), ())
                W, b = receiver.discriminant(st, rule.discriminant_ridge(0.0, st.n, req.k))
                Z = req.row_map()(Xt)
                lda = _model(req, st, W, b, Z)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    lr = LogisticRegressionCV(Cs=10, cv=3, max_iter=2000).fit(Zs, ys)
                    scores = {"lda-noise-free": 100 * metrics(lda, Xtest, ytest)[metric]}
                    Zt = req.row_map()(Xtest)
                    if metric == "roc_auc":
                        from sklearn.metrics import roc_auc_score
                        scores["lr-source-rows"] = 100 * float(roc_auc_score(ytest == 1, lr.predict_proba(Zt)[:, 1]))
                    else:
                        scores["lr-source-rows"] = 100 * float(np.mean(lr.predict(Zt) == ytest))
                row = {"task": task, "basis_of_epsilon": eps, "k": req.k, **scores}
                f.write(json.dumps(row) + "\n")
                print(row, flush=True)
    return 0


def _mean_se(v) -> tuple[float, float]:
    v = np.asarray(v, dtype=float)
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else 0.0


def dplr_cells() -> dict:
    """(task, ε) → DP-LR values: bow5000 from the recorded dev run (points), PhysioNet from ``dplr``."""
    cells: dict = {}
    recs = json.loads(Path(__file__).parents[1].joinpath("dp_source_only/results/dp-source-only-dev.json").read_text())["records"]
    for r in recs:
        if r["row"] == "dp-lr" and r["task"] in LARGE_BOW and r["epsilon"] is not None:
            cells.setdefault((r["task"], float(r["epsilon"])), []).append(r["accuracy"])
    return cells


def _triggers(r: dict, cand: str, tau) -> bool:
    """Whether the finish ``cand`` replaces the default in row ``r`` at threshold ``tau`` (``None``: never)."""
    return cand != "none" and tau is not None and r["n"] / r["K"] >= FINISH_ROWS and r["q"] >= tau and cand in r


def choose(out: str, dplr_path: str) -> int:
    """The rule of README.md (issue 37, item 3) on the rows of ``run``: prints the table and the choice."""
    rows = [json.loads(line) for line in open(out)]
    lr = dplr_cells()
    for line in open(dplr_path):
        r = json.loads(line)
        lr.setdefault((r["task"], float(r["epsilon"])), []).append(r["roc_auc"])
    tasks = sorted({r["task"] for r in rows})
    qs = sorted({r["q"] for r in rows})
    taus = [0.0, *[q for q in qs if math.isfinite(q)], math.inf]

    def cell(task, eps, cand, tau):
        rs = [r for r in rows if r["task"] == task and r["epsilon"] == eps]
        vals = [r[cand] if _triggers(r, cand, tau) else r["none"] for r in rs]
        return vals, [r["none"] for r in rs]

    results = []
    present = [c for c in CANDIDATES[1:] if all(c in r for r in rows)]
    for cand, tau in [("none", None), *((c, t) for c in present for t in taus)]:
        feasible, below_lr, total = True, 0, []
        for task in tasks:
            means = {}
            for eps in EPSILONS:
                vals, base = cell(task, eps, cand, tau)
                if not vals:
                    continue
                m, se = _mean_se(vals)
                means[eps] = (m, se)
                total.append(m)
                dm, dse = _mean_se(np.subtract(vals, base))
                if dm < -max(1.0, 2 * dse):
                    feasible = False
                if eps in (4.0, 8.0) and (task, eps) in lr:
                    lm, lse = _mean_se(lr[(task, eps)])
                    if m - lm < -max(1.0, 2 * math.hypot(se, lse)):
                        below_lr += 1
            order = [e for e in EPSILONS if e in means]
            for a, b in zip(order, order[1:]):
                if means[b][0] < means[a][0] - max(1.0, 2 * math.hypot(means[a][1], means[b][1])):
                    feasible = False
        results.append((cand, tau, feasible, below_lr, float(np.mean(total))))
    for r in results:
        print(f"{r[0]:14s} τ={r[1]!s:>9.9s} feasible={r[2]} below-DP-LR={r[3]} mean={r[4]:.2f}")
    best = min((r for r in results if r[2]), key=lambda r: (r[3], -r[4], -(math.inf if r[1] is None else r[1])))
    print(f"CHOICE: {best[0]} τ = {best[1]}")
    table(rows, lr)
    return 0


def table(rows: list[dict], lr: dict) -> None:
    """Markdown: per pair and ε, mean ± SE of each candidate (as computed, every cell) and DP-LR."""
    cands = [c for c in (*CANDIDATES, "library") if any(c in r for r in rows)]
    print("| pair | ε | q | " + " | ".join(cands) + " | DP-LR |")
    print("|---|---|---|" + "---|" * (len(cands) + 1))
    for task in sorted({r["task"] for r in rows}):
        for eps in EPSILONS:
            rs = [r for r in rows if r["task"] == task and r["epsilon"] == eps]
            if not rs:
                continue
            cells = []
            for c in cands:
                m, se = _mean_se([r[c] for r in rs if c in r]) if any(c in r for r in rs) else (math.nan, 0)
                cells.append(f"{m:.1f} ± {se:.1f}" if rs[0]["epsilon"] is not None else f"{m:.1f}")
            lm = f"{_mean_se(lr[(task, eps)])[0]:.1f} ± {_mean_se(lr[(task, eps)])[1]:.1f}" if (task, eps) in lr else ""
            print(f"| {task} | {eps if eps else 'None'} | {rs[0]['q']:.0f} | " + " | ".join(cells) + f" | {lm} |")


#: The rows-per-class floor of the trigger, fixed a priori (README.md): the library's constant.
FINISH_ROWS = rule.FINISH_ROWS_PER_CLASS


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cmd", choices=("run", "dplr", "choose", "report", "oracle", "single"))
    ap.add_argument("out")
    ap.add_argument("extra", nargs="?")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--pairs", nargs="*", default=[])
    ap.add_argument("--round2", action="store_true", help="only the default and the round-2 candidate (lda-mp)")
    a = ap.parse_args(argv)
    if a.cmd == "run":
        return run(a.out, a.seeds, a.pairs, a.workers, only_round2=a.round2)
    if a.cmd == "oracle":
        return oracle(a.out, a.pairs)
    if a.cmd == "dplr":
        return dplr(a.out, a.seeds)
    if a.cmd == "single":  # PhysioNet single sources with n/K ≥ FINISH_ROWS (development): does the finish cost them?
        tasks = [p.task for p in R.PHYSIONET_PAIRS if p.load().Xs.shape[0] / 2 >= FINISH_ROWS]
        return run(a.out, a.seeds, [], a.workers, tasks=tasks, only_round2=True)
    if a.cmd == "report":
        tasks = [p.task for p in R.REPORT_PAIRS if p.dataset == "bow5000"]
        return run(a.out, a.seeds, [], a.workers, tasks=tasks, epsilons=(1.0, 2.0, 4.0, 8.0, None), only_round2=True)
    return choose(a.out, a.extra)


if __name__ == "__main__":
    sys.exit(main())
