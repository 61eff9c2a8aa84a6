"""DP-SWD benchmarks (Rakotomamonjy & Ralaivola, ICML 2021): toy study, digits DA, generative model, Office.

Suites: ``dpswd`` (everything), ``dpswd-toy`` (Fig. 2), ``dpswd-digits`` (Table 1 M→U, U→M),
``dpswd-gen`` (Table 2 MNIST), ``dpswd-office`` (extra Office-Caltech pairs). Every run is sized
for a 2-core CPU (subsets and epochs listed in ``params``; see benchmarks/dpswd/README.md). Our USPS is
the 16×16 original (7291 train / 2007 test), bilinearly resized to 28×28 — the paper used
CoGAN's 28×28 USPS (7438 rows).
"""

from __future__ import annotations

import functools
import math
import os
import time

import numpy as np
import torch

from dpadapt.bench.common import cached_pair, task_name
from dpadapt.bench.registry import BenchTask, RunOutcome, register_suite
from dpadapt.privacy import accounting
from dpadapt.privacy.families.dpswd import projections_guarantee

EPS, DELTA = 10.0, 1e-5
#: Table 1 (ε = 10): DANN / SWD / DP-SWD
PAPER_DIGITS = {
    ("mnist", "usps"): {"dann": 93.9, "swd": 95.5, "dpswd": 94.0},
    ("usps", "mnist"): {"dann": 86.2, "swd": 84.8, "dpswd": 83.4},
}
#: Table 1 Office-31 has no counterpart here; Office-Caltech pairs are extra rows without paper values.
#: Table 2: MNIST downstream accuracy of classifiers trained on generated data at (10, 1e-5)
PAPER_GEN = {("dpswd", "mlp"): 76.0, ("dpswd", "logreg"): 77.0, ("swd", "mlp"): 87.0, ("swd", "logreg"): 82.0}
#: the digits hyper-parameters of the reference code (da_settings.py): lr, grad_scale
DIGITS_HP = {("mnist", "usps"): (5e-4, 0.05), ("usps", "mnist"): (5e-3, 1.0)}


def _threads() -> None:
    torch.set_num_threads(int(os.environ.get("DPADAPT_TORCH_THREADS", "1")))


# --- toy (Fig. 2) ----------------------------------------------------------------------------------


def _toy_runner(shift: float, sigma: float, private: bool, n: int, draws: int):
    def run(seed: int) -> RunOutcome:
        from dpadapt.datasets.synthetic import gaussian_mean_shift
        from dpadapt.transport import swd

        from dpadapt.privacy.mechanisms import random_streams

        rng, noise = random_streams(seed)
        values, eps = [], []
        R, k = 3.0, 50
        for _ in range(draws):
            Xs, Xt = gaussian_mean_shift(n, shift, d=5, random_state=rng)
            U = swd.directions(5, k, rng)
            if private:
                Ps = swd.project_rows(Xs, U, sigma, noise, R)
                Pt = swd.project_rows(Xt, U, sigma, noise, R)
                eps.append(accounting.analytic_gaussian_epsilon(sigma, DELTA, 2 * R * swd.operator_norm(U)))
            else:
                Ps, Pt = swd.project_rows(Xs, U, 0.0), swd.project_rows(Xt, U, 0.0)
            values.append(swd.sliced_wasserstein(Ps, Pt))
        guarantees = {}
        if private:
            guarantees["target"] = projections_guarantee(max(eps), DELTA, sigma=sigma, clip_norm=R, k=k)
        return RunOutcome(float(np.mean(values)), guarantees, {"std": float(np.std(values)), "draws": draws, "n": n})

    return run


@register_suite("dpswd-toy", "DP-SWD toy (Fig. 2): smoothed SWD vs SWD between N(0,I5) and N(c1,I5), σ = 1, 3")
def build_toy(quick: bool, epsilons=None) -> list[BenchTask]:
    shifts = (0.0, 0.5, 1.0) if quick else tuple(np.round(np.linspace(0, 1, 6), 2))
    n, draws = (300, 2) if quick else (1000, 5)
    tasks = []
    for sigma in (1.0, 3.0):
        for c in shifts:
            for private in (False, True):
                tasks.append(BenchTask(
                    suite="dpswd-toy", task=f"toy:c={c:g},sigma={sigma:g}", method="dpswd" if private else "swd",
                    mode="sound" if private else "non-private", run=_toy_runner(float(c), sigma, private, n, draws),
                    epsilon=math.inf, delta=DELTA if private else None, metric="distance",
                    params={"n": n, "draws": draws, "k": 50, "clip_norm": 3.0},
                ))
    return tasks


# --- digits (Table 1) -------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4)
def _digits(source: str, target: str, quick: bool):
    """Subsets (fixed seed 0): source ≤ 10000 rows, target train ≤ 10000, full target test (quick: 2000/2000/1000);
    ``$DPADAPT_DPSWD_ROWS`` overrides the 10000 of the full suite."""
    pair = cached_pair("digits", source, target, resize=28)
    rng = np.random.default_rng(0)
    cap = 2000 if quick else int(os.environ.get("DPADAPT_DPSWD_ROWS", 10000))

    def sub(X, y, m):
        idx = rng.choice(X.shape[0], size=min(m, X.shape[0]), replace=False)
        return np.asarray(X[idx], dtype=np.float32), y[idx]

    Xs, ys = sub(pair.Xs, pair.ys, cap)
    Xt, yt = sub(pair.Xt, pair.yt, cap)
    Xte, yte = sub(pair.Xt_test, pair.yt_test, 1000 if quick else pair.Xt_test.shape[0])
    return Xs, ys, Xt, yt, Xte, yte


def _digits_config(source: str, target: str, quick: bool) -> dict:
    """Reference-code settings; ``$DPADAPT_DPSWD_LAMBDA`` overrides λ (for the documented λ = 1 re-run),
    ``$DPADAPT_DPSWD_SENSITIVITY`` the sound sensitivity bound (default ``spectral``) and
    ``$DPADAPT_DPSWD_EPOCHS`` the 10 epochs of the full suite."""
    lr, lam = DIGITS_HP[(source, target)]
    lam = float(os.environ.get("DPADAPT_DPSWD_LAMBDA", lam))
    sensitivity = os.environ.get("DPADAPT_DPSWD_SENSITIVITY", "spectral")
    return {"network": "digits", "adapt_steps": 300 if quick else 1000,
            "epochs": 3 if quick else int(os.environ.get("DPADAPT_DPSWD_EPOCHS", 10)), "min_steps": 0, "start_align": 1, "batch_size": 64 if quick else 128,
                "lr": lr, "lam": lam, "k": 200, "epsilon": EPS, "delta": DELTA, "sensitivity": sensitivity}


def _da_outcome(model, Xte, yte, t0: float) -> RunOutcome:
    res = model.train_result_
    extra = {"train_seconds": res.seconds, "wall_seconds": time.perf_counter() - t0, "releases": res.releases,
             "steps": res.steps, "sigma_mean": res.sigma_mean}
    g = res.guarantee
    if g is not None:
        extra["noise_multiplier"] = g.details.get("noise_multiplier")
        extra["guarantee_reasons"] = list(g.reasons)
    guarantees = {"target": g} if g is not None else {}
    return RunOutcome(100.0 * model.score(Xte, yte), guarantees, extra)


def _swd_da_runner(data, config: dict, mode: str, design: str = "per-step", **extra):
    """``design="marginals"``: one release of the target's sliced marginals (``extra``: e.g. the
    ``marginal_weight=0`` control, source-only + the same head fine-tuning and no alignment)."""
    def run(seed: int) -> RunOutcome:
        from dpadapt.deep.swd_da import DPSWDAdapter

        _threads()
        Xs, ys, Xt, _, Xte, yte = data()
        t0 = time.perf_counter()
        params = dict(config, random_state=seed, design=design, **extra)
        if mode in ("source-only", "non-private"):  # non-private: epsilon=None; source-only: also λ = 0
            params.update(epsilon=None, delta=None, **({"lam": 0.0} if mode == "source-only" else {}))
        else:
            params["privacy_mode"] = mode
        model = DPSWDAdapter(**params).fit_domains(Xs, ys, Xt)
        return _da_outcome(model, Xte, yte, t0)

    return run


def _dann_runner(data, config: dict):
    def run(seed: int) -> RunOutcome:
        from torch import nn

        from dpadapt.deep.dann import (  # imported lazily
            DANN,
            DANNNetwork,
        )
        from dpadapt.deep.swd_da import (
            DigitsFeatureExtractor,
            digits_classifier,
            mlp_classifier,
            mlp_feature_extractor,
        )

        _threads()
        Xs, ys, Xt, _, Xte, yte = data()
        digits = config["network"] == "digits"
        if not digits:  # same public standardisation as DPSWDAdapter
            mean, scale = Xs.mean(0), Xs.std(0) + 1e-6
            Xs, Xt, Xte = (Xs - mean) / scale, (Xt - mean) / scale, (Xte - mean) / scale

        def network(n_features: int, n_classes: int) -> DANNNetwork:
            if digits:
                g, h, width = DigitsFeatureExtractor(), digits_classifier(n_classes), 320
            else:
                g, width = mlp_feature_extractor(n_features), 50
                h = mlp_classifier(width, n_classes)
            return DANNNetwork(g, h, nn.Sequential(nn.Linear(width, 100), nn.ReLU(), nn.Linear(100, 2)))

        t0 = time.perf_counter()
        # as many steps as the SWD rows (``epochs`` passes over the source at batch B)
        steps = config["epochs"] * math.ceil(Xs.shape[0] / min(config["batch_size"], Xs.shape[0], Xt.shape[0]))
        model = DANN(network=network, epochs=1, min_steps=steps, batch_size=config["batch_size"], lr=0.05,
                     lr_domain=0.01, random_state=seed).fit_domains(Xs, ys, Xt)
        return RunOutcome(100.0 * model.score(Xte, yte), {}, {"wall_seconds": time.perf_counter() - t0,
                                                              "train_seconds": model.train_log_.seconds, "steps": steps})

    return run


#: Why DP-SWD paper mode misses the paper on the digits, labelled measured or candidate; the
#: runs are in benchmarks/dpswd/README.md ("Issue 31"). M→U is unexplained: even the non-private rows miss.
CAUSES = {
    ("mnist", "usps"): "candidate: unexplained — non-private SWD and the paper's DANN row also miss by 15–17 points at "
                       "the paper's 100 epochs (measured, round 6), so it is not the privacy; candidates, none isolated: "
                       "CoGAN's 28×28 USPS (7 438 rows) vs our 16×16 USPS resized (7 291), the M→U evaluation set, "
                       "the reference code's preprocessing, lr/λ at the full data size",
    ("usps", "mnist"): "measured: without the projection noise the same loop (non-private SWD; paper mode at σ = 0 is "
                       "exactly SWD) scores 81.8 ± 2.1 (paper 84.8): ≈ 3 points are the protocol's, the rest the "
                       "paper's per-step noise (benchmarks/dpswd/README.md)",
}
#: The same for the reduced protocol of ``dpswd-digits`` (5 000 rows, 10 epochs; 3-seed rows of benchmarks/dpswd/README.md).
REDUCED_CAUSES = {
    ("mnist", "usps"): "measured: reduced protocol: non-private SWD scores 66.9 ± 1.4 and paper mode 66.8 ± 1.6 (3 seeds): "
                       "the noise costs nothing here, the gap is SWD's own (unexplained on the paper's protocol too)",
    ("usps", "mnist"): "measured: reduced protocol: non-private SWD scores 76.0 ± 2.1 (paper 84.8) and paper mode 68.1 ± 4.9 "
                       "(3 seeds): 9 points are the protocol's, 8 the paper-mode noise",
}
#: Lines of the paper comparison: DP-SWD paper mode beside sound DP-SWD (marginals design: the default), and
#: non-private SWD as its no-noise column (the same loop, λ and lr without the projection noise).
PAPER_ROWS = {("dpswd", "paper"): "DP-SWD", ("dp-swd-marginals", "sound"): "DP-SWD", ("swd", "non-private"): "DP-SWD"}


def _da_tasks(suite: str, name: str, data, config: dict, paper: dict, dann: bool = True,
              quick: bool = False, cause: str | None = None) -> list[BenchTask]:
    rows = [
        ("source-only", "non-private", _swd_da_runner(data, config, "source-only"), None, math.inf),
        ("swd", "non-private", _swd_da_runner(data, config, "non-private"), paper.get("swd"), math.inf),
        ("dpswd", "sound", _swd_da_runner(data, config, "sound"), paper.get("dpswd"), EPS),
        ("dpswd", "paper", _swd_da_runner(data, config, "paper"), paper.get("dpswd"), EPS),
        ("dp-swd-marginals", "sound", _swd_da_runner(data, config, "sound", "marginals"), paper.get("dpswd"), EPS),
    ]
    if not quick:  # controls of the marginals design: exact marginals; source-only + the same head fine-tuning
        rows += [
            ("swd-marginals", "non-private", _swd_da_runner(data, config, "non-private", "marginals"), None, math.inf),
            ("source-only-finetuned", "non-private",
             _swd_da_runner(data, config, "non-private", "marginals", marginal_weight=0.0), None, math.inf),
        ]
    if dann:
        rows.append(("dann", "non-private", _dann_runner(data, config), paper.get("dann"), math.inf))
    return [
        BenchTask(suite=suite, task=name, method=method, mode=mode, run=run, epsilon=eps,
                  delta=DELTA if mode != "non-private" else None, paper_value=pv,
                  params={k: v for k, v in config.items() if k != "network"},
                  paper_row=PAPER_ROWS.get((method, mode)), cause=cause if (method, mode) in PAPER_ROWS else None)
        for method, mode, run, pv, eps in rows
    ]


@register_suite("dpswd-digits", "DP-SWD DA on MNIST→USPS and USPS→MNIST (USPS resized 16→28), ε = 10, with SWD/DANN baselines")
def build_digits(quick: bool, epsilons=None) -> list[BenchTask]:
    tasks = []
    for s, t in (("mnist", "usps"),) if quick else (("mnist", "usps"), ("usps", "mnist")):
        data = functools.partial(_digits, s, t, quick)
        name = f"digits:{s[0].upper()}->{t[0].upper()}"
        tasks += _da_tasks("dpswd-digits", name, data, _digits_config(s, t, quick), PAPER_DIGITS[(s, t)], dann=not quick,
                           quick=quick, cause=REDUCED_CAUSES.get((s, t)))
    return tasks


# --- digits, the papers' protocol --------------------------------------------------

#: (epochs, source-only pre-training epochs) per direction, fixed a priori from the compute budget (each
#: run ≤ 15 min on 2 CPU cores), never from target labels: U→M runs the paper's 100 epochs of the
#: 7291-row USPS source (57 steps each) with its 10 epochs of pre-training; M→U cannot run 100 epochs of
#: the 60 000-row MNIST source (46 900 steps) in that budget and runs 20 (9 380 steps), pre-training for
#: the paper's share of the run (10 %, 2 epochs).
PAPER_PROTOCOL_EPOCHS = {("mnist", "usps"): (20, 2), ("usps", "mnist"): (100, 10)}


def _paper_protocol_epochs(source: str, target: str) -> tuple[int, int]:
    """(epochs, pre-training epochs) of a ``dpswd-digits-paper`` row: ``PAPER_PROTOCOL_EPOCHS`` (fixed by the
    15-min CPU budget), or ``$DPADAPT_DIGITS_PAPER_EPOCHS`` epochs for both tasks with the paper's 1-in-10
    pre-training (the paper's full length, 100, is a long run: about an hour per M→U row on one core)."""
    override = os.environ.get("DPADAPT_DIGITS_PAPER_EPOCHS")
    if override is None:
        return PAPER_PROTOCOL_EPOCHS[(source, target)]
    epochs = int(override)
    return epochs, max(1, epochs // 10)


@functools.lru_cache(maxsize=2)
def _digits_full(source: str, target: str):
    """Every train row of both domains (MNIST 60 000, USPS 7 291, USPS bilinearly resized 16→28);
    the target's train rows are the unlabelled adaptation set, its test set the evaluation set."""
    pair = cached_pair("digits", source, target, resize=28)
    f32 = functools.partial(np.asarray, dtype=np.float32)
    return f32(pair.Xs), pair.ys, f32(pair.Xt), pair.yt, f32(pair.Xt_test), pair.yt_test


@register_suite("dpswd-digits-paper", "the papers' digits protocol (full MNIST/USPS train sets, paper CNN, B = 128, paper epochs "
                                      "within 15 min on 2 cores): source-only, SWD, DANN, DP-SWD marginals (ε = 10)")
def build_digits_paper(quick: bool, epsilons=None) -> list[BenchTask]:
    tasks = []
    for s, t in (("mnist", "usps"), ("usps", "mnist")):
        epochs, start = _paper_protocol_epochs(s, t)
        config = dict(_digits_config(s, t, quick=False), epochs=epochs, start_align=start)
        if quick:  # a smoke run of the same code path
            config.update(epochs=1, start_align=0.5, adapt_steps=50)
        data = functools.partial(_digits_full, s, t)
        name = f"digits-paper:{s[0].upper()}->{t[0].upper()}"
        # the sound per-step design at this length: ~10^4 releases, σ ≫ signal; its paper mode is the paper's row
        tasks += [task for task in _da_tasks("dpswd-digits-paper", name, data, config, PAPER_DIGITS[(s, t)], dann=True,
                                             cause=CAUSES.get((s, t)))
                  if (task.method, task.mode) != ("dpswd", "sound")]
        # the paper's DANN row: SWD's loop, optimiser, λ and pre-training with the adversarial domain loss
        tasks.append(BenchTask(suite="dpswd-digits-paper", task=name, method="dann-adam", mode="non-private",
                               run=_swd_da_runner(data, config, "non-private", alignment="adversarial"),
                               epsilon=math.inf, delta=None, paper_value=PAPER_DIGITS[(s, t)]["dann"],
                               params={k: v for k, v in config.items() if k != "network"}))
    return tasks


# --- Office-Caltech (extra) ---------------------------------------------------------------------------


def _office(dataset: str, source: str, target: str):
    pair = cached_pair(dataset, source, target).dense()
    return (np.asarray(pair.Xs, dtype=np.float32), pair.ys, np.asarray(pair.Xt, dtype=np.float32), pair.yt,
            np.asarray(pair.Xt_test, dtype=np.float32), pair.yt_test)


@register_suite("dpswd-office", "DP-SWD DA on Office-Caltech pairs (DeCAF6 D↔W, SURF A→C), ε = 10, δ = 1e-3, in-run baselines")
def build_office(quick: bool, epsilons=None) -> list[BenchTask]:
    pairs = [("decaf6", "dslr", "webcam")] if quick else [("decaf6", "dslr", "webcam"), ("decaf6", "webcam", "dslr"), ("surf", "amazon", "caltech")]
    config = {"network": "mlp", "epochs": 5 if quick else 50, "min_steps": 0, "start_align": 1, "batch_size": 32, "lr": 5e-4, "lam": 0.5, "k": 100,
                  "epsilon": EPS, "delta": 1e-3, "clip_norm": 1.0}
    tasks = []
    for ds, s, t in pairs:
        data = functools.partial(_office, ds, s, t)
        for task in _da_tasks("dpswd-office", task_name(ds, s, t), data, config, {}, dann=not quick, quick=quick):
            task.delta = 1e-3 if task.mode != "non-private" else None
            tasks.append(task)
    return tasks


# --- generative model (Table 2) ----------------------------------------------------------------------


@functools.lru_cache(maxsize=2)
def _mnist(quick: bool):
    from dpadapt.datasets import load_domain

    tr, te = load_domain("digits", "mnist", split="train"), load_domain("digits", "mnist", split="test")
    Xte, yte = te.X, te.y
    if quick:
        idx = np.random.default_rng(0).choice(Xte.shape[0], 2000, replace=False)
        Xte, yte = Xte[idx], yte[idx]
    return np.asarray(tr.X, dtype=np.float32), tr.y, Xte, yte


def _gen_runner(mode: str, head: str, quick: bool, design: str = "per-step"):
    """``design``: "per-step" (the paper's DP-SWD generator, a release per step), "marginals" (ONE release
    of per-class sliced marginals, then free training) or "marginals-joint" (one release of the joint
    rows' marginals)."""
    def run(seed: int) -> RunOutcome:
        from dpadapt.deep import generator as gen
        from dpadapt.models import make_classifier

        _threads()
        X, y, Xte, yte = _mnist(quick)
        rng = np.random.default_rng(seed)
        if design == "per-step":
            cfg = gen.GeneratorConfig(mode=mode, steps=_gen_steps(quick), epsilon=EPS, delta=DELTA, classes=tuple(range(10)))
        else:
            steps, k = _marginals_gen_size(quick)
            cfg = gen.MarginalsConfig(epsilon=EPS if mode == "sound" else None, delta=DELTA, steps=steps, k=k,
                                      classes=tuple(range(10)), per_class=design == "marginals")
        t0 = time.perf_counter()
        res = _trained_generator(mode, design, quick, seed, cfg, X, y)
        Xg, yg = gen.sample(res.generator, 100 if quick else int(os.environ.get("DPADAPT_DPSWD_GEN_PER_CLASS", 1000)), rng)
        clf = make_classifier(head, random_state=seed).fit(Xg, yg)
        acc = 100.0 * clf.score(Xte, yte)
        out_dir = os.environ.get("DPADAPT_ARTIFACTS", "benchmarks/dpswd/results")
        tag = "" if design == "per-step" else f"-{design}"
        grid = gen.save_grid(res.generator, os.path.join(out_dir, f"dpswd-gen{tag}-{mode}{'-quick' if quick else ''}-seed{seed}.png"), rng)
        g = res.guarantee
        return RunOutcome(acc, {"target": g} if g else {}, {
            "train_seconds": res.seconds, "wall_seconds": time.perf_counter() - t0, "steps": res.steps,
            "batch_size": cfg.batch_size, "k": cfg.k, "grid": str(grid),
            "noise_multiplier": g.details.get("noise_multiplier") if g else None,
        })

    return run


_GENERATORS: dict = {}


def _gen_steps(quick: bool) -> int:
    """Generator steps: 60 (quick) or 3000 (full); ``$DPADAPT_DPSWD_GEN_STEPS`` overrides the full value."""
    return 60 if quick else int(os.environ.get("DPADAPT_DPSWD_GEN_STEPS", 3000))


def _marginals_gen_size(quick: bool) -> tuple[int, int]:
    """(steps, k) of the one-release generators: 60 steps on 200 directions (quick) or 2000 on 1000."""
    return (60, 200) if quick else (2000, 1000)


def _trained_generator(mode, design, quick, seed, cfg, X, y):
    """Train once per (mode, design, quick, seed); the MLP and LogReg rows share the generator."""
    from dpadapt.deep import generator as gen
    from dpadapt.privacy.mechanisms import random_streams

    key = (mode, design, quick, seed)
    if key not in _GENERATORS:
        if design == "per-step":
            _GENERATORS[key] = gen.train_generator(X, y, cfg, np.random.default_rng(1000 + seed))
        else:
            _GENERATORS[key] = gen.train_generator_from_marginals(X, y, cfg, *random_streams(1000 + seed))
    return _GENERATORS[key]


@register_suite("dpswd-gen", "DP-SWD conditional generator on MNIST at (10, 1e-5): MLP/LogReg trained on generated data")
def build_gen(quick: bool, epsilons=None) -> list[BenchTask]:
    rows = [("sound", "dpswd", "per-step"), ("non-private", "swd", "per-step"), ("sound", "dp-gen-marginals", "marginals")]
    if not quick:  # the joint-rows release of round 4, and the per-class design without noise (its ceiling)
        rows += [("sound", "dp-gen-marginals-joint", "marginals-joint"), ("non-private", "gen-marginals", "marginals")]
    tasks = []
    for mode, method, design in rows:
        for head in ("mlp", "logreg"):
            paper = PAPER_GEN.get(("dpswd" if mode == "sound" else "swd", head)) if design == "per-step" or mode == "sound" else None
            params = ({"steps": _gen_steps(quick), "batch_size": 100, "k": 1000} if design == "per-step" else
                      dict(zip(("steps", "k"), _marginals_gen_size(quick)), batch_size=500, releases=1))
            tasks.append(BenchTask(
                suite="dpswd-gen", task=f"mnist-gen:{head}", method=method, mode=mode,
                run=_gen_runner(mode, head, quick, design), epsilon=EPS if mode == "sound" else math.inf,
                delta=DELTA if mode == "sound" else None, paper_value=paper, params=params,
            ))
    return tasks


@register_suite("dpswd", "All DP-SWD benchmarks: toy (Fig. 2), digits DA (Table 1), generative (Table 2), Office extras")
def build_all(quick: bool, epsilons=None) -> list[BenchTask]:
    tasks = build_toy(quick) + build_digits(quick) + build_gen(quick) + ([] if quick else build_office(quick))
    for t in tasks:
        t.suite = "dpswd"
    return tasks
