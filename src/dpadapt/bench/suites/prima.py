"""PRIMA benchmarks (Jin et al., IJCAI 2021), both parties protected: Table 1 pairs, Amazon, ε sweep, ablation.

Rows: the sound class-statistics protocol (``prima``/sound, our default), its non-private counterpart
(``prima``/non-private: the same pipeline without noise), the DP source-only baseline at the same
(ε, δ) (``dp-ncm``: DP nearest class mean from the same single class-statistics release, no
adaptation), the DP logistic regression on the source alone (``dp-logreg``, noisy full-batch GD at the same
(ε, δ)), the published heads protocol in sound and paper mode (``prima-heads``, ``prisa``),
and the non-private baselines source-only, CORAL and SA, all in the same runs.

Defaults fixed a priori on pairs OTHER than the reported ones (see ``benchmarks/prima/README.md`` and
``benchmarks/selection/classstats/README.md``, round 4): basis_dim = 1024 (over 64/256, round 2) and the refinement
``ot+st`` (OT start, then cross-fitted logistic-regression self-training on the target's rows) chosen
among 12 variants on GoogLeNet A→D, A→W, D→A, W→A (10 classes); no basis (round 2) and ``none+st``
(nearest-prototype labels, then the same self-training) chosen among 6 on Amazon K→B, D→E, B→K, E→D.
Nothing is tuned on target labels of the reported pairs.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

from dpadapt.bench.common import amazon_pairs, cached_pair, domain_pairs, task_name
from dpadapt.bench.registry import BenchTask, RunOutcome, register_suite

DELTA = 1e-5
#: Table 1 of the paper (LR, ε = 2), accuracy as a fraction.
PAPER_TABLE1 = {
    ("dslr", "webcam"): {"prima": 0.976, "prisa": 0.961, "coral": 0.983, "sa": 0.976},
    ("webcam", "dslr"): {"prima": 0.987, "prisa": 0.979, "coral": 0.998, "sa": 0.987},
}
PAPER_AMAZON = (("kitchen", "dvd"), ("dvd", "books"), ("books", "electronics"), ("electronics", "kitchen"))

#: Ablation variants of the paper (Fig. 3) of the heads protocol: estimator parameters.
ABLATIONS = {
    "basic": {"partition": "full", "psd_repair": "none"},
    "rse-basic": {"partition": "random", "psd_repair": "none"},
    "rse-basic-fs": {"partition": "forward", "psd_repair": "none"},
    "basic-shrinking": {"partition": "full", "psd_repair": "shrink"},
    "prima-eigclip": {"partition": "random", "psd_repair": "eig_clip"},
    "prima-published": {"partition": "forward", "psd_repair": "shrink"},
}

RESULTS = Path(__file__).resolve().parents[4] / "benchmarks" / "prima" / "results"

#: The paper's DP-SGD setting (Sec. 5.2): noise multiplier σ = 4, batch 25, ε read off the moments
#: accountant as a function of the epochs E. Paper mode runs the most epochs whose ε at σ = 4 stays
#: within the target ε, then calibrates σ (≈ 4) to spend exactly that ε.
PAPER_SIGMA = 4.0
PAPER_BATCH = 25

#: The per-class reading's cause (the σ = 4 rule at ε/q; the same epochs without noise score ``no_noise``).
PER_CLASS_CAUSE = ("measured: the σ = 4 rule at ε/10 leaves one epoch per binary model; the same runs without noise "
                   "score {no_noise}: the budget's length, not the noise")
#: Why paper mode misses the paper's number, one line per (source, target, paper row), labelled measured
#: (a run isolates it: docs/design/paper-mode.md, benchmarks/prima/README.md "Issue 31") or candidate.
CAUSES = {
    ("dslr", "webcam", "PRIMA"): "measured: DP-SGD noise at the paper's σ≈4, B=25 on 157 rows: the same code without noise "
                                 "scores 90.6 (random subspaces: 98.0) and recovers only at ε≈32",
    ("webcam", "dslr", "PRIMA"): "measured: partition: with forward selection the same code scores 92.6 without noise (noise "
                                 "costs ≈ 2 points); random subspaces reach 100 without noise but 72.8 at ε = 2",
    ("dslr", "webcam", "PRIMA σ=Thm.3"): "measured: only σ changed against the PRIMA line (Thm. 3's 2.42 for 3.92): 74.6 vs "
                                          "57.2; the same code without noise scores 90.6, so the noise still costs 16 points",
    ("webcam", "dslr", "PRIMA σ=Thm.3"): "measured: only σ changed against the PRIMA line (Thm. 3's 2.42 for 3.97): 91.9 vs "
                                          "90.8 (3 seeds); its no-noise run scores 92.6: the forward-selection partition's own "
                                          "gap",
    ("dslr", "webcam", "PRIMA per-class ε/q"): PER_CLASS_CAUSE.format(no_noise=28.4),
    ("webcam", "dslr", "PRIMA per-class ε/q"): PER_CLASS_CAUSE.format(no_noise=19.3),
    ("dslr", "webcam", "PRISA"): "measured: the same code without noise scores 93.6 (paper 96.1); DP-SGD at the paper's "
                                 "σ≈4, B=25 on 157 rows costs 36 points (as PRIMA's)",
    ("webcam", "dslr", "PRISA"): "measured: the same code without noise scores 92.1 (paper 97.9): the forward-selection "
                                 "pipeline's own gap, as PRIMA's W→D; the noise costs the rest",
}


def paper_epochs(n_source: int, epsilon: float, delta: float = DELTA) -> int:
    """The most epochs E (≥ 1) whose Poisson-subsampled Gaussian at σ = 4, batch 25 spends ≤ ε (the paper's rule)."""
    from dpadapt.alignment.dp_training import dpsgd_schedule
    from dpadapt.privacy import accounting

    q, per_epoch = dpsgd_schedule(n_source, PAPER_BATCH, 1)
    best = 1
    for epochs in range(1, 201):
        if accounting.epsilon(accounting.poisson_gaussian_event(PAPER_SIGMA, q, per_epoch * epochs), delta) > epsilon:
            break
        best = epochs
    return best


def _quiet() -> None:
    import torch

    torch.set_num_threads(1)


def _is_bow(dataset: str) -> bool:
    return dataset in ("bow5000", "amazon", "amazon_reviews/bow5000")


def _estimator(method: str, mode: str, dataset: str, epsilon: float | None, seed: int, epochs: int, classes: tuple,
               extra: dict | None = None):
    from dpadapt.alignment import CORAL, PRIMA, PRISA, SubspaceAlignment
    from dpadapt.baselines import SourceOnly

    if method == "source-only":
        return SourceOnly(random_state=seed)
    if method == "coral":
        return CORAL(random_state=seed)
    if method == "sa":
        return SubspaceAlignment(random_state=seed)
    bow = _is_bow(dataset)
    if method == "dp-logreg":  # DP source-only: noisy full-batch GD logistic regression at the same (ε, δ)
        from dpadapt.classstats import DPLogisticRegression

        return DPLogisticRegression(epsilon=epsilon, delta=DELTA if epsilon is not None else None, classes=classes,
                                    feature_type="counts" if bow else "dense", random_state=seed)
    params = {"epsilon": epsilon, "delta": DELTA if epsilon is not None else None, "classes": classes,
              "log_counts": bow and mode != "paper", "random_state": seed}
    if method in ("prima", "dp-ncm"):
        # fixed on other pairs (benchmarks/selection/classstats/README.md, round 4): office features → public 1024-d basis,
        # OT start then full-feature self-training (GoogLeNet A→D, A→W, D→A, W→A); Amazon counts → no basis,
        # nearest-prototype labels then full-feature self-training (bow5000 K→B, D→E, B→K, E→D)
        params.update(refinement="none+st", basis_dim=None) if bow else params.update(refinement="ot+st", basis_dim=1024)
        if method == "dp-ncm":  # DP source-only: the same release, prototypes only, no target statistics
            params.update(refinement="prototypes", center=False, basis_dim=None)
    else:
        paper = mode in ("paper", "paper-no-noise")
        params.update(
            source_release="dpsgd_heads", epochs=epochs,
            # paper mode: forward selection on the raw target rows, except on 5000-d Amazon where the
            # column-subset criterion is too slow on 2 shared CPUs (random partition; documented)
            partition="forward" if paper and not bow else "random",
            psd_repair="shrink" if paper else "eig_clip",
            privacy_mode="paper" if paper else "sound",
        )
    params.update(extra or {})
    cls = PRISA if method.startswith("prisa") else PRIMA
    return cls(**params)


_SWEEP: dict[tuple[str, str, str], dict[float, list[float]]] = {}


def _plot_sweep(task: str) -> None:
    """Accuracy vs ε of every row measured so far in this process (PNG in benchmarks/prima/results)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(6, 4))
    rows = [(key, points) for key, points in sorted(_SWEEP.items()) if key[0] == task]
    for i, ((_, method, mode), points) in enumerate(rows):
        eps = sorted(points)
        means = [100 * np.mean(points[e]) for e in eps]
        if math.isinf(eps[0]):
            ax.axhline(means[0], linestyle="--", color=f"C{i}", label=f"{method} ({mode})")
        else:
            ax.plot(eps, means, marker="o", color=f"C{i}", label=f"{method} ({mode})")
    for (s, t), values in PAPER_TABLE1.items():
        if task_name("decaf6", s, t) == task:
            ax.plot([2.0], [100 * values["prima"]], marker="*", markersize=12, color="k", linestyle="none",
                    label="PRIMA, paper (ε = 2, unsound)")
    ax.set_xlabel("ε per party (δ = 1e-5)")
    ax.set_ylabel("target accuracy (%)")
    ax.set_title(f"PRIMA family, {task}")
    ax.legend(fontsize=7)
    RESULTS.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(RESULTS / f"prima_sweep_{task.replace(':', '_').replace('->', '-')}.png", dpi=120)
    plt.close(fig)


def _runner(dataset, source, target, method, mode, epsilon, epochs, extra=None, sweep=False):
    def run(seed: int) -> RunOutcome:
        import numpy as np

        _quiet()
        pair = cached_pair(dataset, source, target)
        classes = tuple(np.unique(pair.ys).tolist())  # the dataset's public label set (0..K-1)
        if mode in ("paper", "paper-no-noise"):  # the paper's σ = 4 rule; without noise: the same epochs
            eps_rule = PAPER_EPSILON_OF_RUN if math.isinf(epsilon) else epsilon
            if (extra or {}).get("per_class_budget"):  # each one-vs-rest model gets ε/q (the paper's split)
                eps_rule /= len(classes)
            epochs_run = paper_epochs(len(pair.ys), eps_rule)
        else:
            epochs_run = epochs
        est = _estimator(method, mode, dataset, None if math.isinf(epsilon) else epsilon, seed, epochs_run, classes, extra)
        if method == "source-only":
            est.fit_domains(pair.Xs, pair.ys)
        else:
            est.fit_domains(pair.Xs, pair.ys, pair.Xt)
        value = est.score(pair.Xt_test, pair.yt_test)
        guarantees = dict(est.guarantees_)
        extra_out = {}
        if mode in ("paper", "paper-no-noise"):
            extra_out["epochs"] = epochs_run
        if "target" in guarantees:
            extra_out["epsilon_target_party"] = guarantees["target"].epsilon
            extra_out["epsilon_source_party"] = guarantees["source"].epsilon
            extra_out["protocol"] = est.plan_.kind
        if sweep:
            name = task_name(dataset, source, target)
            _SWEEP.setdefault((name, method, mode), {}).setdefault(epsilon, []).append(value)
            _plot_sweep(name)
        return RunOutcome(value, guarantees, extra_out)

    return run


def _tasks(suite, pairs, methods, epsilons, epochs, paper=None, extra_by_method=None, sweep=False):
    out = []
    for (ds, s, t), (method, mode), eps in itertools.product(pairs, methods, epsilons):
        private = mode in ("sound", "paper")
        if not private and eps != epsilons[0]:
            continue  # non-private baselines once per task
        # the paper's number beside our rows of the same method (its own procedure is the paper-mode row)
        paper_value = (paper or {}).get((s, t), {}).get(PAPER_NAMES.get(method, method))
        row = PAPER_ROWS.get((method, mode)) if paper else None
        extra = (extra_by_method or {}).get(method, READINGS.get(method))
        out.append(
            BenchTask(
                suite=suite,
                task=task_name(ds, s, t),
                method=method,
                mode=mode,
                run=_runner(ds, s, t, method, mode, eps if private else float("inf"), epochs, extra, sweep),
                epsilon=eps if private else float("inf"),
                delta=DELTA if private else None,
                paper_value=paper_value,
                params={"epochs": epochs, **(extra or {})},
                paper_row=row,
                cause=CAUSES.get((s, t, row)) if row else None,
            )
        )
    return out


BASELINES = [("source-only", "non-private"), ("coral", "non-private"), ("sa", "non-private")]
OURS = [("prima", "sound"), ("dp-ncm", "sound"), ("dp-logreg", "sound"), ("prima", "non-private")]
#: The paper's other readings of its DP-SGD budget, each its own paper-mode row: Thm. 3's σ
#: (√(2 ln(1.25/δ))/ε = 2.42 at ε = 2) instead of the accountant's, and Sec. 5.2's one binary model per class
#: at ε/q (logistic-regression heads).
READINGS = {"prima-heads-thm3": {"paper_calibration": "theorem3"}, "prima-heads-perclass": {"per_class_budget": True}}
HEADS = [("prima-heads", "sound"), ("prisa", "sound"), ("prima-heads", "paper"), ("prisa", "paper"),
         ("prima-heads", "paper-no-noise"), ("prisa", "paper-no-noise"), ("prima-heads-thm3", "paper"),
         ("prima-heads-perclass", "paper"), ("prima-heads-perclass", "paper-no-noise")]
PAPER_NAMES = {"prima-heads": "prima", "prima-heads-thm3": "prima", "prima-heads-perclass": "prima"}
#: Lines of the paper comparison: paper mode, the same without noise, and our sound default beside them.
PAPER_ROWS = {("prima", "sound"): "PRIMA", ("prisa", "sound"): "PRISA", ("prima-heads", "paper"): "PRIMA", ("prima-heads", "paper-no-noise"): "PRIMA",
              ("prisa", "paper"): "PRISA", ("prisa", "paper-no-noise"): "PRISA", ("prima-heads-thm3", "paper"): "PRIMA σ=Thm.3",
              ("prima-heads-perclass", "paper"): "PRIMA per-class ε/q", ("prima-heads-perclass", "paper-no-noise"): "PRIMA per-class ε/q"}
#: ε whose paper-mode epochs the run without noise uses (the paper's Table 1 ε).
PAPER_EPSILON_OF_RUN = 2.0


@register_suite("prima", "PRIMA (sound class statistics, heads, paper) vs DP source-only, CORAL, SA, source-only: DeCAF6 D↔W and the paper's 4 Amazon pairs, ε = 2")
def build(quick: bool, epsilons=None) -> list[BenchTask]:
    eps = list(epsilons or [2.0])
    if quick:
        pairs = [("decaf6", "dslr", "webcam")]
        methods = [("source-only", "non-private"), ("coral", "non-private")] + OURS + [("prima-heads", "paper"),
                                                                                         ("prima-heads", "paper-no-noise")]
        return _tasks("prima", pairs, methods, eps, epochs=10, paper=PAPER_TABLE1)
    office = _tasks("prima", [("decaf6", "dslr", "webcam"), ("decaf6", "webcam", "dslr")], BASELINES + OURS + HEADS, eps, 10,
                    PAPER_TABLE1)
    amazon = _tasks("prima", [("bow5000", s, t) for s, t in PAPER_AMAZON], BASELINES + OURS + HEADS, eps, 10)
    return office + amazon


@register_suite("prima-amazon12", "PRIMA (sound) vs DP source-only, CORAL and source-only on all 12 Amazon bow5000 pairs, ε = 2")
def build_amazon12(quick: bool, epsilons=None) -> list[BenchTask]:
    eps = list(epsilons or [2.0])
    pairs = [("bow5000", s, t) for s, t in amazon_pairs()]
    methods = [("source-only", "non-private"), ("coral", "non-private")] + OURS
    return _tasks("prima-amazon12", pairs[:1] if quick else pairs, methods, eps, epochs=10)


@register_suite("prima-office", "PRIMA (sound) vs baselines on Office-Caltech SURF (12 pairs) and GoogLeNet (6 pairs), ε = 2")
def build_office(quick: bool, epsilons=None) -> list[BenchTask]:
    eps = list(epsilons or [2.0])
    pairs = [("surf", s, t) for s, t in domain_pairs("surf")] + [("googlenet", s, t) for s, t in domain_pairs("googlenet")]
    methods = BASELINES + OURS
    if quick:
        return _tasks("prima-office", [("surf", "caltech", "amazon")], methods[:2] + [("prima", "sound")], eps, epochs=5)
    return _tasks("prima-office", pairs, methods, eps, epochs=10)


@register_suite("prima-sweep", "Accuracy vs ε ∈ {0.5, 1, 2, 4, 8} on DeCAF6 D→W: sound, paper, DP source-only, non-private (PNG in benchmarks/prima/results)")
def build_sweep(quick: bool, epsilons=None) -> list[BenchTask]:
    eps = list(epsilons or ([1.0, 4.0] if quick else [0.5, 1.0, 2.0, 4.0, 8.0]))
    pairs = [("decaf6", "dslr", "webcam")]
    methods = [("source-only", "non-private"), ("coral", "non-private")] + OURS + ([] if quick else [("prima-heads", "paper")])
    return _tasks("prima-sweep", pairs, methods, eps, epochs=10, paper=PAPER_TABLE1, sweep=True)


@register_suite("prima-ablation", "Ablation of the heads protocol (Fig. 3 style): Basic, RSE+Basic, RSE+Basic+FS, Basic+Shrinking, PRIMA on SURF C→A, ε = 2")
def build_ablation(quick: bool, epsilons=None) -> list[BenchTask]:
    eps = list(epsilons or [2.0])
    names = ["rse-basic", "prima-eigclip"] if quick else list(ABLATIONS)
    methods = [(n, "sound") for n in names]
    extras = {n: ABLATIONS[n] for n in names}
    return _tasks("prima-ablation", [("surf", "caltech", "amazon")], methods, eps, epochs=5 if quick else 10, extra_by_method=extras)


# Parts of the ``prima`` suite as separate suites, so that each part can run with its own number
# of seeds on a small machine (paper mode's forward selection and per-subspace runs are slow).


@register_suite("prima-decaf-sound", "Part of `prima`: DeCAF6 D↔W, baselines, DP source-only and sound PRIMA at ε = 2")
def build_decaf_sound(quick: bool, epsilons=None) -> list[BenchTask]:
    pairs = [("decaf6", "dslr", "webcam"), ("decaf6", "webcam", "dslr")]
    return _tasks("prima", pairs[:1] if quick else pairs, BASELINES + OURS, list(epsilons or [2.0]), 10, PAPER_TABLE1)


@register_suite("prima-decaf-heads", "Part of `prima`: DeCAF6 D↔W, the heads protocol (sound and paper mode) at ε = 2")
def build_decaf_heads(quick: bool, epsilons=None) -> list[BenchTask]:
    pairs = [("decaf6", "dslr", "webcam"), ("decaf6", "webcam", "dslr")]
    return _tasks("prima", pairs[:1] if quick else pairs, HEADS, list(epsilons or [2.0]), 10, PAPER_TABLE1)


@register_suite("prima-amazon4", "Part of `prima`: the paper's 4 Amazon pairs, ε = 2, sound PRIMA, DP source-only and the baselines")
def build_amazon4(quick: bool, epsilons=None) -> list[BenchTask]:
    methods = [("source-only", "non-private")] + OURS + [("coral", "non-private")]
    pairs = [("bow5000", s, t) for s, t in PAPER_AMAZON]
    return _tasks("prima", pairs[:1] if quick else pairs, methods, list(epsilons or [2.0]), 10)
