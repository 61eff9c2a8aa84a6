"""Calibrations and Guarantees of the PRIMA family (both parties protected), fixed before any noise.

Two protocols (``source_release``):

* ``"class_statistics"`` (sound default): the source releases ONE Gaussian on its per-class sums and
  counts of unit rows under a public per-row map (log1p for counts, ℓ2 normalisation, a public
  random basis). Δ = 2 under replace-one whatever n is (:data:`CLASS_STATISTICS_SENSITIVITY`), σ
  from the analytic Gaussian at (ε, δ). The target releases nothing: it classifies and refines on
  its own rows, and the model stays with it (its own computation), so its guarantee is ε = 0.
* ``"dpsgd_heads"`` (the published design): the target releases its noisy subspace second moments
  (Analyze Gauss, Δ = √2/n replace-one), the source trains DP-SGD heads on CORAL/SA-aligned rows
  (replace-one too, n public: its sampling rate and steps come from n; dp-accounting's replace-one PLD).
"""

from __future__ import annotations

import functools
import math

from dpadapt.configs.prima import PAPER_CALIBRATIONS
from dpadapt.privacy import accounting
from dpadapt.privacy.guarantee import PAPER_ADD_REMOVE_REASON, Guarantee
from dpadapt.privacy.mechanisms import CLASS_STATISTICS_SENSITIVITY

THEOREM_CLASS_STATISTICS = (
    "Analytic Gaussian mechanism (Balle & Wang, ICML 2018, Thm. 8) on the joint vector of per-class sums "
    "and counts of unit-norm rows under a public per-row map; ℓ2 sensitivity 2 (replace-one), the label set "
    "public; labels covered by the same release"
)
THEOREM_TARGET_SILENT = (
    "nothing computed from the target's rows leaves the target: it post-processes the source's release and "
    "keeps its refined classifier (its own computation); a classifier sent elsewhere needs its own mechanism"
)
#: What the target's (0, 0) covers and what it keeps.
TARGET_KEEPS = (
    "the fitted model is the target's own and is not covered: it holds the exact target mean (model_.target_mean, "
    "the re-centring of its rows) and a classifier refined on its rows, so its predictions change with one target "
    "row; (0, 0) is the cost of the exchange with the source, not of publishing the model"
)
THEOREM_TARGET_COVARIANCES = (
    "Analytic Gaussian mechanism (Balle & Wang 2018, Thm. 8) on the packed upper triangles of all "
    "subspace blocks of (1/n)XᵀX, joint sensitivity √2/n for unit rows (spec 04, soundness notes 1–3)"
)
TARGET_PAPER_REASONS = (
    "features min-max scaled to [0, 1] with the data's own per-feature extremes (not public)",
    "row norms unbounded after [0, 1] scaling, so the claimed covariance sensitivity 1/n does not hold",
    "one Gaussian release per subspace, composed by 'parallel composition' although every record is in every subspace",
    "classic Gaussian calibration sqrt(2 ln(1.25/δ))/ε used for ε ≥ 1 (not proven there)",
)
FORWARD_REASON = "subspace partition chosen by forward selection on the raw target rows and released without noise"
SOURCE_PAPER_REASONS = (
    "source covariance used in CORAL/SA without noise",
    "one DP-SGD run per subspace, claimed by 'parallel composition' although every record is in every run",
    "clipping bound set to the median per-example gradient norm of the private source data",
    "features min-max scaled to [0, 1] with the source's own per-feature extremes (not public)",
)


def class_statistics_plan(epsilon: float, delta: float) -> tuple[Guarantee, float]:
    """(source Guarantee, σ) of one class-statistics release at (ε, δ), replace-one."""
    sens = CLASS_STATISTICS_SENSITIVITY["replace_one"]
    sigma = accounting.analytic_gaussian_sigma(epsilon, delta, sens)
    g = Guarantee(
        party="source", unit="record", relation="replace_one", epsilon=float(epsilon), delta=float(delta),
        events=(accounting.gaussian_event(sigma / sens),), accounting="analytic_gaussian",
        theorem=THEOREM_CLASS_STATISTICS, sensitivity=sens, details={"sigma": sigma, "row_norm": 1.0},
    )
    return g, sigma


def joint_block_sensitivity(n: int, row_norm: float = 1.0, relation: str = "replace_one") -> float:
    """ℓ2 sensitivity of the packed upper triangles of all blocks of (1/n) XᵀX, rows ‖x‖ ≤ row_norm.

    replace-one: ‖aaᵀ − bbᵀ‖_F/n ≤ √2·r²/n. add/remove (unnormalised sum XᵀX, returned for n = 1):
    ‖aaᵀ‖_F = r².
    """
    if relation == "replace_one":
        return math.sqrt(2.0) * row_norm**2 / n
    if relation == "add_remove":
        return row_norm**2 / n
    raise ValueError(f"unknown relation {relation!r}")


def classic_sigma_unproven(epsilon: float, delta: float, sensitivity: float) -> float:
    """The paper's σ = Δ·sqrt(2 ln(1.25/δ))/ε, used in paper mode even for ε ≥ 1 (not proven there)."""
    return sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


def target_silent() -> Guarantee:
    """The target's Guarantee when it releases nothing (ε = 0, δ = 0)."""
    return Guarantee(
        party="target", unit="record", relation="replace_one", epsilon=0.0, delta=0.0, accounting="pure",
        theorem=THEOREM_TARGET_SILENT, details={"released": "nothing", "kept by the target": TARGET_KEEPS},
    )


def target_covariances_plan(n_target: int, epsilon: float, delta: float, *, partition: str,
                            privacy_mode: str) -> tuple[Guarantee, float]:
    """(target Guarantee, per-entry σ) of the subspace second-moment release."""
    if privacy_mode == "sound":
        sens = joint_block_sensitivity(n_target, 1.0, "replace_one")
        sigma = accounting.analytic_gaussian_sigma(epsilon, delta, sens)
        reasons = (FORWARD_REASON,) if partition == "forward" else ()
        g = Guarantee(
            party="target", unit="record", relation="replace_one", epsilon=float(epsilon), delta=float(delta),
            events=(accounting.gaussian_event(sigma / sens),), accounting="analytic_gaussian",
            theorem=THEOREM_TARGET_COVARIANCES, mode="sound", valid=not reasons, reasons=reasons,
            sensitivity=sens, details={"sigma_entry": sigma, "row_norm": 1.0},
        )
        return g, sigma
    sens = 1.0 / n_target
    sigma = classic_sigma_unproven(epsilon, delta, sens)
    reasons = TARGET_PAPER_REASONS + ((FORWARD_REASON,) if partition == "forward" else ())
    g = Guarantee(
        party="target", unit="record", relation="replace_one", epsilon=float(epsilon), delta=float(delta),
        accounting="none", theorem="PRIMA Thm. 3 as published (Gaussian mechanism per subspace + parallel composition)",
        mode="paper", valid=False, reasons=reasons + ("published procedure reproduced for comparison (paper mode)",),
        sensitivity=sens, details={"sigma_entry": sigma},
    )
    return g, sigma


def source_heads_event(z_cov: float, dpsgd_events):
    """The sound heads protocol's source events under replace-one: the second-moment sum (noise ``z_cov``·r² per
    packed entry, Δ = √2·r² — :func:`joint_block_sensitivity` at n = 1) and the
    DP-SGD runs (Poisson-subsampled, replace-one PLD)."""
    return accounting.compose([accounting.gaussian_event(z_cov / joint_block_sensitivity(1))] + list(dpsgd_events))


@functools.lru_cache(maxsize=256)
def _calibrate(key: tuple, epsilon: float, delta: float) -> float:
    """The DP-SGD multiplier: sound (``"with_cov"``) under replace-one (PLD); paper (``"alone"``) by the paper's
    moments accountant (add/remove RDP)."""
    kind, z_cov, q, steps, runs = key
    if kind == "alone":
        return accounting.calibrate_noise_multiplier(lambda z: accounting.poisson_gaussian_event(z, q, steps), epsilon,
                                                     delta, "add_remove", "rdp")
    return accounting.calibrate_noise_multiplier(
        lambda z: source_heads_event(z_cov, [accounting.poisson_gaussian_event(z, q, steps)] * runs), epsilon, delta,
        "replace_one", "pld")


THEOREM3_REASON = ("noise multiplier from Thm. 3's one-shot bound σ ≥ √(2 ln(1.25/δ))/ε, applied at every DP-SGD step "
                   "with no composition over the steps")
PER_CLASS_REASON = ("one binary model per class and subspace, each at ε/q, composed by basic composition over the classes "
                    "(Sec. 5.2) and by 'parallel composition' over the subspaces")


def theorem3_noise_multiplier(epsilon: float, delta: float) -> float:
    """σ = √(2 ln(1.25/δ))/ε, PRIMA's Thm. 3 (2.42 at ε = 2, δ = 1e-5), used by paper mode's 'theorem3' reading."""
    return math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


def dpsgd_heads_plan(n_heads: int, epsilon: float, delta: float, *, sample_rate: float, steps: int,
                     cov_budget_fraction: float, joint: bool, privacy_mode: str, paper_calibration: str = "accountant",
                     budget_split: int = 1) -> tuple[Guarantee, float | None, float]:
    """(source Guarantee, covariance noise multiplier or None, DP-SGD noise multiplier) of the heads release.

    Sound (replace-one, n public): the source second-moment sum (Δ = √2 for unit rows) with z_cov at
    (fraction·ε, δ), then the smallest DP-SGD z with PLD(cov ∘ DP-SGD) ≤ (ε, δ). Paper: one per-subspace run
    at (ε/``budget_split``, δ) by the paper's add/remove moments accountant — z from the accountant
    (``paper_calibration="accountant"``) or from Thm. 3's bound (``"theorem3"``) —, no covariance noise (the
    published claim, flagged invalid). ``budget_split`` = q for the paper's one-vs-rest models (one per class).
    """
    q = sample_rate
    if privacy_mode == "paper":
        if paper_calibration not in PAPER_CALIBRATIONS:
            raise ValueError(f"paper_calibration must be one of {PAPER_CALIBRATIONS}, got {paper_calibration!r}")
        eps_model = float(epsilon) / int(budget_split)
        if paper_calibration == "theorem3":
            z = theorem3_noise_multiplier(eps_model, float(delta))
        else:
            z = _calibrate(("alone", 0.0, q, steps, 1), eps_model, float(delta))
        extra = ((THEOREM3_REASON,) if paper_calibration == "theorem3" else ()) + ((PER_CLASS_REASON,) if budget_split > 1 else ())
        g = Guarantee(
            party="source", unit="record", relation="add_remove", epsilon=float(epsilon), delta=float(delta),
            events=(accounting.poisson_gaussian_event(z, q, steps),), accounting="rdp",
            theorem="PRIMA Thm. 3 as published (moments accountant per model + parallel composition)",
            mode="paper", valid=False,
            reasons=SOURCE_PAPER_REASONS + extra + (PAPER_ADD_REMOVE_REASON, "published procedure reproduced for comparison (paper mode)"),
            details={"noise_multiplier": z, "sample_rate": q, "steps": steps, "runs": n_heads * int(budget_split),
                     "calibration": paper_calibration, "epsilon_per_model": eps_model},
        )
        return g, None, z
    z_cov = accounting.analytic_gaussian_sigma(cov_budget_fraction * epsilon, delta, joint_block_sensitivity(1))
    runs = 1 if joint else n_heads
    z = _calibrate(("with_cov", z_cov, q, steps, runs), float(epsilon), float(delta))
    event = source_heads_event(z_cov, [accounting.poisson_gaussian_event(z, q, steps)] * runs)
    g = Guarantee.from_event(
        event, party="source", unit="record", relation="replace_one", delta=delta, method="pld",
        theorem=(
            "Gaussian mechanism on the source second-moment blocks (Δ = √2 for unit rows, replace-one, n public) "
            "composed with Poisson-subsampled DP-SGD (Abadi et al. 2016; a record's clipped gradient replaced, "
            "dp-accounting's REPLACE_ONE privacy-loss distribution) over all subspace heads"
            + (" trained jointly (one clip of the concatenated per-example gradient)" if joint else f" ({runs} runs composed)")
        ),
        details={"cov_noise_multiplier": z_cov, "noise_multiplier": z, "sample_rate": q, "steps": steps, "runs": runs,
                 "cov_budget_fraction": cov_budget_fraction},
    )
    return g, z_cov, z
