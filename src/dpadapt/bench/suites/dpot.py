"""DPOT / DPDA benchmarks (LeTien, Habrard & Sebban, IJCAI 2019).

Sound DPOT (rows ``dpot-cs``) is the sound route's prototypes design: the target's request → ONE Gaussian
release of the source's class sums and counts → the prototypes refined by OT on the target's rows.
Every table also reports, at the same (ε, δ), the DP source-only baselines ``dp-ncm`` (nearest class
mean) and ``dp-logreg`` (noisy full-batch GD). The sound per-row release is refused;
the per-row procedure runs in paper mode only, with a "paper mode without noise" twin.

* ``dpot`` — Table 1 protocol on Office-Caltech10 DeCAF6 D→W and W→D (paper: DPDA 96.1 / 98.0 at
  ε = 20, OTDA 98.7 / 98.7): sound DPOT (class statistics), DPDA paper (whole batch, the paper's
  minibatch protocol, and the whole batch without noise) under two readings of the unreported
  settings (``dpda-mb-*``: C / max C, λ_e = 0.01, ε′ = 1 on top of ε; ``dpda-mb-fit-*``: the cost
  scaling and λ_e fixed on the paper's non-private OTDA row, ε′ inside ε — :data:`OTDA_FIT`), OTDA and
  source-only, with the 3-layer network and logistic regression. δ = 1/(1.2 n_s).
* ``dpot-office`` — the same protocol (whole-batch releases) on every available SURF and GoogLeNet
  pair (no paper number; compare with the in-run OTDA and source-only), logistic-regression head.
* ``dpot-fig2`` — Fig. 2 study: relative error |W̃ − W| / W of the exact-OT Wasserstein estimate
  versus ε (whole batch) and versus the noise multiplier (minibatches), sound and paper.
* ``dpot-sweep`` — accuracy versus ε (1, 2, 4, 8, 20 and, for sound mode, 50, 100) on DeCAF6 D→W,
  sound (class statistics) and paper, OTDA and source-only in the same run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dpadapt.bench.common import cached_pair, domain_pairs, source_only_runner, task_name
from dpadapt.bench.registry import BenchTask, RunOutcome, register_suite
from dpadapt.privacy.families.dpot import projection_error_guarantee
from dpadapt.classstats import DPLogisticRegression, DPNearestClassMean
from dpadapt.privacy.mechanisms import NoiseSource, gaussian
from dpadapt.transport import OTDA, DPOTAdapter
from dpadapt.transport.coupling import debiased_cost, solve_ot, squared_distances
from dpadapt.transport.dpot import (
    draw_projection,
    plan_dpot_source,
    preprocess_rows,
)


def noisy_projection(X, M, sigma, noise: NoiseSource):
    """X M + N(0, σ²) through the Gaussian mechanism (Fig. 2 study of the debiased cost)."""
    return gaussian(X @ M, sigma=sigma, sensitivity=1.0, noise=noise).value

#: The paper's ε per source domain (Table 1: ε = 20 when the source is DSLR or Webcam, else 8).
PAPER_EPSILON = {"dslr": 20.0, "webcam": 20.0, "amazon": 8.0, "caltech": 8.0}
#: Paper Table 1 (accuracy as a fraction): DPDA and OTDA on DeCAF.
PAPER_TABLE1 = {
    ("dslr", "webcam"): {"dpda": 0.961, "otda": 0.987},
    ("webcam", "dslr"): {"dpda": 0.980, "otda": 0.987},
}
BATCH = 128
HEADS = ("mlp", "logreg")
#: "Paper mode without noise": the same per-row code at ε = ε′ = 10⁹ (σ/w ≈ 5·10⁻⁵, label
#: histogram noise ≈ 10⁻⁹), so every stage but the noise is the published one. Minibatch twins fix T
#: to the noisy run's number of steps (the accountant would allow any T at ε = 10⁹).
NO_NOISE_EPSILON = 1e9
#: The OTDA-fit reading (``benchmarks/dpot/dpot_reading_otda_fit.md``): the cost normalisation and λ_e chosen by
#: rule 1 on the paper's non-private OTDA row only (``benchmarks/dpot/results/dpot-otda-fit.json``), and
#: rule 2's split of the stated ε: ε′ = LABEL_SHARE·ε for the label histogram, the rest for the features.
OTDA_FIT = {"cost_norm": "median", "reg_e": 1.0}
LABEL_SHARE = 0.25
#: Why paper mode misses the paper's DPDA number, one line per (source, paper row) (runs:
#: ``benchmarks/dpot/dpot_paper_mode.py``, write-up ``benchmarks/dpot/README.md``).
CAUSES = {
    ("dslr", "DPDA-mb-mlp"): "measured: this reading's OT step without noise stops at 89.7 (same T); the Laplace label histogram "
                   "(ε′ = 1 assumed) costs 10.9 (labels-only run), the feature noise 1.2 (features-only run)",
    ("dslr", "DPDA-mb-logreg"): "measured: this reading's OT step without noise stops at 87.0 (same T); the label histogram "
                      "(ε′ = 1 assumed) costs 7.3 (labels-only run), the feature noise none (features-only 88.1)",
    ("dslr", "DPDA-mlp"): "measured: this reading's OT step without noise stops at 89.1; the noise costs 9 (minibatch rows: "
                "nearly all the label histogram)",
    ("dslr", "DPDA-logreg"): "measured: this reading's OT step without noise stops at 90.2; the noise costs 7 (minibatch rows: "
                   "nearly all the label histogram)",
    ("webcam", "DPDA-mb-logreg"): "measured: this reading's OT step without noise stops at 85.6 (same T, 3 seeds); the label "
                        "histogram (ε′ = 1 assumed) costs 12.8 (labels-only 72.8), the feature noise none (features-only 86.4)",
    ("webcam", "DPDA-logreg"): "measured: this reading's OT step without noise stops at 91.0; the noise costs 7 (minibatch "
                     "rows: nearly all the label histogram)",
    ("webcam", "DPDA-mb-mlp"): "candidate: 76.9 ± 3.8 over 3 seeds; the logreg rows' split (OT step without noise ≤ 91, the "
                     "noise in the label histogram) is the candidate",
    ("webcam", "DPDA-mlp"): "candidate: not run under this reading; the logreg rows' split (OT step without noise ≤ 91, the "
                  "noise in the label histogram) is the candidate",
    ("dslr", "DPDA-mb-fit-mlp"): ("measured: within 3 points (94.5 ± 3.3, 5 seeds); without noise 97.5 (same T), the label histogram "
                                   "at ε′ = 5 costs ≈ 2 (labels only 95.4), the feature noise nothing (features only 97.6)"),
    ("dslr", "DPDA-mb-fit-logreg"): ("measured: 92.5 ± 3.0; the 3-layer rows split the noise (label histogram ≈ 2, features nothing); "
                                      "non-private OTDA with this head 97.6"),
    ("webcam", "DPDA-mb-fit-mlp"): "candidate: 93.6 ± 4.5 over 3 seeds; the D→W split (label histogram ≈ 2 points) is the candidate",
    ("webcam", "DPDA-mb-fit-logreg"): ("measured: the noise costs nothing (no noise 80.3, labels only 80.5, same T = 48) while "
                                        "non-private OTDA with this head reaches 96.8: the noise-free minibatch/projection pipeline "
                                        "loses it (which part: candidate, not isolated)"),
}


def _delta(n_s: int) -> float:
    return 1.0 / (1.2 * n_s)


def _dpda_runner(
    dataset: str, source: str, target: str, eps: float, head: str, **kwargs
):
    def run(seed: int) -> RunOutcome:
        pair = cached_pair(dataset, source, target)
        est = DPOTAdapter(
            epsilon=eps,
            delta=_delta(len(pair.ys)),
            head=head,
            random_state=seed,
            **kwargs,
        )
        est.fit_domains(pair.Xs, pair.ys, pair.Xt)
        p = est.release_.params
        extra = {
            "sigma": p["sigma"],
            "steps": p["steps"],
            "w_tilde": est.w_tilde_,
            "feature_epsilon": p["feature_epsilon"],
        }
        extra.update({f"seconds_{k}": v for k, v in est.seconds_.items()})
        return RunOutcome(
            est.score(pair.Xt_test, pair.yt_test), {"source": est.guarantee_}, extra
        )

    return run


def _classstats_runner(dataset: str, source: str, target: str, eps: float | None, estimator=DPOTAdapter, **kwargs):
    """Sound DPOT (class statistics) or a DP source-only baseline at (ε, δ = 1/(1.2 n_s)); ε None = non-private."""

    def run(seed: int) -> RunOutcome:
        pair = cached_pair(dataset, source, target)
        est = estimator(epsilon=eps, delta=None if eps is None else _delta(len(pair.ys)),
                        classes=tuple(range(pair.n_classes)), random_state=seed, **kwargs)
        if estimator is DPOTAdapter:
            est.fit_domains(pair.Xs, pair.ys, pair.Xt)
        else:
            est.fit_domains(pair.Xs, pair.ys)
        return RunOutcome(est.score(pair.Xt_test, pair.yt_test), dict(est.guarantees_))

    return run


def _classstats_tasks(suite: str, dataset: str, source: str, target: str, eps: float,
                      paper_row: str | None = None) -> list[BenchTask]:
    """Sound DPOT (the sound route's prototypes design), its non-private counterpart and the DP source-only baselines."""
    name = task_name(dataset, source, target)
    n_s = len(cached_pair(dataset, source, target).ys)
    rows = [("dpot-cs", {}, DPOTAdapter), ("dp-ncm", {}, DPNearestClassMean), ("dp-logreg", {}, DPLogisticRegression)]
    tasks = [
        BenchTask(suite, name, method, "sound", _classstats_runner(dataset, source, target, eps, est, **kw),
                  epsilon=eps, delta=_delta(n_s), params=kw, paper_row=paper_row if method == "dpot-cs" else None)
        for method, kw, est in rows
    ]
    tasks.append(BenchTask(suite, name, "dpot-cs", "non-private", _classstats_runner(dataset, source, target, None)))
    return tasks


def _otda_runner(dataset: str, source: str, target: str, head: str, **kwargs):
    def run(seed: int) -> RunOutcome:
        pair = cached_pair(dataset, source, target)
        est = OTDA(head=head, random_state=seed, **kwargs).fit_domains(pair.Xs, pair.ys, pair.Xt)
        extra = {"w": est.w_, **{f"seconds_{k}": v for k, v in est.seconds_.items()}}
        return RunOutcome(est.score(pair.Xt_test, pair.yt_test), extra=extra)

    return run


def paper_minibatch_steps(n_s: int, eps: float, batch: int = BATCH, noise_multiplier: float = 1.1) -> int:
    """T of the paper's minibatch protocol: the most steps at σ/w = 1.1 whose Poisson RDP ε stays ≤ ε."""
    return plan_dpot_source(n_s, 1, 2, eps, _delta(n_s), projection_seed=0, proj_dim=1, batch_size=batch,
                            noise_multiplier=noise_multiplier, privacy_mode="paper").steps


def _paper_variants(n_s: int, eps: float) -> dict[str, tuple[str, str, float, dict, bool]]:
    """Paper-mode variants: name → (method stem, mode, ε of the run, DPOTAdapter options, joins the paper line).

    ``mb`` is the paper's Table 1 protocol (the headline); the ``-features``/``-labels`` rows keep one
    noise source each (same T), ``-centred`` is the previous (double-centred) cost reading. ``mb-fit``
    is the OTDA-fit reading (:data:`OTDA_FIT`, ε′ = :data:`LABEL_SHARE`·ε inside ε; run at the features'
    share, the guarantee states the total).
    """
    batch = min(BATCH, n_s // 2) if BATCH >= n_s else BATCH
    mb = {"privacy_mode": "paper", "batch_size": batch}
    steps = {"steps": paper_minibatch_steps(n_s, eps, batch)}
    off = {"label_epsilon": NO_NOISE_EPSILON}
    eps_f, eps_l = (1 - LABEL_SHARE) * eps, LABEL_SHARE * eps
    fit = {**mb, **OTDA_FIT}
    fit_steps = {"steps": paper_minibatch_steps(n_s, eps_f, batch)}
    return {
        "paper": ("dpda", "paper", eps, {"privacy_mode": "paper"}, True),
        "paper-no-noise": ("dpda", "paper-no-noise", NO_NOISE_EPSILON, {"privacy_mode": "paper", **off}, True),
        "paper-mb": ("dpda-mb", "paper", eps, mb, True),
        "paper-mb-no-noise": ("dpda-mb", "paper-no-noise", NO_NOISE_EPSILON, {**mb, **steps, **off}, True),
        "paper-mb-features": ("dpda-mb-features", "paper", eps, {**mb, **off}, False),
        "paper-mb-labels": ("dpda-mb-labels", "paper", NO_NOISE_EPSILON, {**mb, **steps}, False),
        "paper-mb-centred": ("dpda-mb-centred", "paper", eps, {**mb, "cost_norm": "centred_max"}, False),
        "paper-mb-fit": ("dpda-mb-fit", "paper", eps_f, {**fit, "label_epsilon": eps_l}, True),
        "paper-mb-fit-no-noise": ("dpda-mb-fit", "paper-no-noise", NO_NOISE_EPSILON, {**fit, **fit_steps, **off}, True),
        "paper-mb-fit-features": ("dpda-mb-fit-features", "paper", eps_f, {**fit, **off}, False),
        "paper-mb-fit-labels": ("dpda-mb-fit-labels", "paper", NO_NOISE_EPSILON,
                                {**fit, **fit_steps, "label_epsilon": eps_l}, False),
    }


def _pair_tasks(
    suite: str,
    dataset: str,
    source: str,
    target: str,
    eps: float,
    heads: Sequence[str],
    variants: Sequence[str],
) -> list[BenchTask]:
    """DPOT-DA variants + OTDA (both cost readings) + source-only rows for one pair at the paper's ε."""
    name = task_name(dataset, source, target)
    paper = PAPER_TABLE1.get((source, target), {}) if dataset == "decaf6" else {}
    n_s = len(cached_pair(dataset, source, target).ys)
    specs = _paper_variants(n_s, eps)
    tasks = []
    for head in heads:
        for v in variants:
            method, mode, run_eps, kw, joins = specs[v]
            row = f"{method.replace('dpda', 'DPDA')}-{head}" if paper and joins else None
            tasks.append(
                BenchTask(
                    suite,
                    name,
                    f"{method}-{head}",
                    mode,
                    _dpda_runner(dataset, source, target, run_eps, head, **kw),
                    epsilon=math.inf if mode == "paper-no-noise" else eps,
                    delta=_delta(n_s),
                    paper_value=paper.get("dpda") if mode == "paper" and joins else None,
                    params={"head": head, **kw, **({"epsilon_run": run_eps} if run_eps != eps else {})},
                    paper_row=row,
                    cause=CAUSES.get((source, row)) if row and mode == "paper" else None,
                )
            )
        for method, kw in (("otda", {}), ("otda-max", {"cost_norm": "max"}), ("otda-fit", dict(OTDA_FIT))):
            tasks.append(
                BenchTask(
                    suite,
                    name,
                    f"{method}-{head}",
                    "non-private",
                    _otda_runner(dataset, source, target, head, **kw),
                    paper_value=paper.get("otda"),
                    params=kw,
                )
            )
        tasks.append(
            BenchTask(
                suite,
                name,
                f"source-only-{head}",
                "non-private",
                source_only_runner(dataset, source, target, head),
            )
        )
    return tasks


@register_suite(
    "dpot",
    "DPOT-DA (LeTien et al.) Table 1 protocol on Office-Caltech DeCAF6 D→W / W→D (sound, paper, OTDA, source-only)",
)
def build_table1(quick: bool, epsilons=None) -> list[BenchTask]:
    pairs = [("dslr", "webcam")] if quick else [("dslr", "webcam"), ("webcam", "dslr")]
    heads = ("logreg",) if quick else HEADS
    # sound per-row rows are refused; the headline is the paper's minibatch protocol
    variants = ("paper-mb", "paper-mb-no-noise", "paper") if quick else tuple(_paper_variants(1000, 20.0))
    tasks = []
    for s, t in pairs:
        eps = float(epsilons[0]) if epsilons else PAPER_EPSILON[s]
        tasks += _classstats_tasks("dpot", "decaf6", s, t, eps,
                                   paper_row="DPDA-mb-logreg" if quick else "DPDA-mb-mlp")
        if quick:
            tasks += _classstats_tasks("dpot", "decaf6", s, t, 2.0)[:3]
        tasks += _pair_tasks("dpot", "decaf6", s, t, eps, heads, variants)
    return tasks


@register_suite(
    "dpot-office",
    "DPOT-DA on every available Office-Caltech SURF / GoogLeNet pair (logreg head)",
)
def build_office(quick: bool, epsilons=None) -> list[BenchTask]:
    tasks = []
    for dataset in ("surf", "googlenet"):
        pairs = domain_pairs(dataset)
        for s, t in pairs[:1] if quick else pairs:
            eps = float(epsilons[0]) if epsilons else PAPER_EPSILON[s]
            # the paper's minibatch protocol (T·B ≈ 20k training images for A/C sources) takes minutes per
            # run on 2 shared cores; it is measured on DeCAF (suite ``dpot``) only
            variants = ("paper",)
            tasks += _classstats_tasks("dpot-office", dataset, s, t, eps)
            tasks += _pair_tasks(
                "dpot-office", dataset, s, t, eps, ("logreg",), variants
            )
    return tasks


#: DeCAF6 dslr → webcam, the pair of the paper's ε sweep and Fig. 2.
_DW = ("dslr", "webcam", "decaf6")


def _dw_grid(epsilons, quick: bool, quick_list: list[float], full_list: list[float]) -> tuple[str, str, str, str, list[float]]:
    """The D→W task of the ε sweeps, ``(source, target, dataset, task name, ε grid)``: the grid is the user's
    ``--epsilon`` values, else the suite's quick or full grid."""
    s, t, dataset = _DW
    return s, t, dataset, task_name(dataset, s, t), list(epsilons) if epsilons else (quick_list if quick else full_list)


@register_suite(
    "dpot-sweep",
    "DPOT-DA accuracy versus ε on DeCAF6 D→W: sound vs paper, with OTDA and source-only",
)
def build_sweep(quick: bool, epsilons=None) -> list[BenchTask]:
    s, t, dataset, name, eps_list = _dw_grid(epsilons, quick, [2.0, 20.0], [1.0, 2.0, 4.0, 8.0, 20.0])
    n_s = len(cached_pair(dataset, s, t).ys)
    sound_extra = [] if quick or epsilons else [50.0, 100.0]
    head = "logreg"
    tasks = []
    for eps in eps_list + sound_extra:
        tasks += _classstats_tasks("dpot-sweep", dataset, s, t, eps)[:3]
        rows = []  # the sound per-row variants are refused (the class-statistics rows above)
        if eps in eps_list:
            rows += [("dpda", "paper", {"privacy_mode": "paper"})]
            if not quick:
                rows += [
                    (
                        "dpda-mb",
                        "paper",
                        {"privacy_mode": "paper", "batch_size": BATCH},
                    ),
                ]
        for method, mode, kw in rows:
            tasks.append(
                BenchTask(
                    "dpot-sweep",
                    name,
                    f"{method}-{head}",
                    mode,
                    _dpda_runner(dataset, s, t, eps, head, **kw),
                    epsilon=eps,
                    delta=_delta(n_s),
                    params=kw,
                )
            )
    tasks.append(
        BenchTask(
            "dpot-sweep",
            name,
            f"otda-{head}",
            "non-private",
            _otda_runner(dataset, s, t, head),
        )
    )
    tasks.append(
        BenchTask(
            "dpot-sweep",
            name,
            f"source-only-{head}",
            "non-private",
            source_only_runner(dataset, s, t, head),
        )
    )
    return tasks


# -- Fig. 2: relative error of the Wasserstein estimate ---------------------------------------------


def _exact_w(C: np.ndarray) -> float:
    return solve_ot(C, "exact").cost_value


def _fig2_runner(
    dataset: str,
    source: str,
    target: str,
    mode: str,
    eps: float | None,
    z: float | None,
    n_batches: int,
):
    """Whole batch (``z is None``): |W̃ − W|/W at ε. Minibatch: mean over ``n_batches`` random B×B
    problems of |W̃_t − W_t|/W_t at noise multiplier z; ε is what ``n_batches`` steps cost."""

    def run(seed: int) -> RunOutcome:
        pair = cached_pair(dataset, source, target)
        n_s, k = pair.Xs.shape
        delta = _delta(n_s)
        rng = np.random.default_rng(seed)  # public: which minibatches are compared
        noise = NoiseSource()
        batch = min(BATCH, n_s - 1)
        # the whole-batch plan gives M, Δ = 2C‖M‖op and w; minibatch noise is σ = z·Δ (sound) or z·w (paper)
        plan = plan_dpot_source(
            n_s,
            k,
            pair.n_classes,
            eps if eps is not None else 1.0,
            delta,
            projection_seed=seed,
            labels="public" if mode == "sound" else "rr",
            privacy_mode=mode,
        )
        sigma = (
            plan.sigma
            if z is None
            else z * (plan.sensitivity if mode == "sound" else plan.max_row_norm)
        )
        M = draw_projection(k, plan.proj_dim, plan.projection_seed)
        Xs = preprocess_rows(pair.Xs, plan.row_norm, plan.clip_norm)
        Xt = preprocess_rows(pair.Xt, plan.row_norm, plan.clip_norm)
        if z is None:
            W = _exact_w(squared_distances(Xs, Xt))
            Wt = _exact_w(
                debiased_cost(noisy_projection(Xs, M, sigma, noise), Xt @ M, sigma)
            )
            err, guarantee = abs(Wt - W) / W, plan.guarantee
        else:
            errs = []
            for _ in range(n_batches):
                i = rng.choice(n_s, size=batch, replace=False)
                j = rng.choice(Xt.shape[0], size=min(batch, Xt.shape[0]), replace=False)
                W = _exact_w(squared_distances(Xs[i], Xt[j]))
                Wt = _exact_w(
                    debiased_cost(
                        noisy_projection(Xs[i], M, sigma, noise), Xt[j] @ M, sigma
                    )
                )
                errs.append(abs(Wt - W) / W)
            err = float(np.mean(errs))
            guarantee = projection_error_guarantee(
                z,
                n_s,
                batch,
                n_batches,
                delta,
                privacy_mode=mode,
                sensitivity=plan.sensitivity if mode == "sound" else plan.max_row_norm,
            )
        return RunOutcome(float(err), {"source": guarantee}, {"sigma": sigma})

    return run


@register_suite(
    "dpot-fig2",
    "DPOT Fig. 2: relative error |W̃−W|/W vs ε (whole batch) and vs σ/Δ (minibatch), DeCAF6 D→W",
)
def build_fig2(quick: bool, epsilons=None) -> list[BenchTask]:
    s, t, dataset, name, eps_list = _dw_grid(epsilons, quick, [4.0, 10.0], [1.0, 2.0, 4.0, 5.0, 10.0, 20.0, 50.0, 100.0])
    n_batches = 20 if quick else 200
    tasks = []
    for mode in ("sound", "paper"):
        for eps in eps_list:
            tasks.append(
                BenchTask(
                    "dpot-fig2",
                    name,
                    "dpot-whole",
                    mode,
                    _fig2_runner(dataset, s, t, mode, eps, None, 0),
                    epsilon=eps,
                    metric="relative_error",
                )
            )
        for z in (0.7, 1.0, 1.3):
            tasks.append(
                BenchTask(
                    "dpot-fig2",
                    f"{name} z={z:g}",
                    "dpot-minibatch",
                    mode,
                    _fig2_runner(dataset, s, t, mode, None, z, n_batches),
                    epsilon=math.inf,
                    metric="relative_error",
                    params={"noise_multiplier": z, "batches": n_batches},
                )
            )
    return tasks
