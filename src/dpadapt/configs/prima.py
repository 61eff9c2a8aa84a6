"""Hyper-parameters of PRIMA / PRISA (:mod:`dpadapt.alignment`)."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from dpadapt.configs.base import Config, param
from dpadapt.configs.classstats import REFINEMENTS

PARTITIONS = ("random", "forward", "full")
ALIGNMENTS = ("coral", "sa")
SOURCE_RELEASES = ("auto", "class_statistics", "dpsgd_heads")
#: repairs of a noisy covariance block into a PSD one (post-processing)
PSD_REPAIRS = ("eig_clip", "shrink", "none")
#: Paper mode's two readings of the DP-SGD noise: Sec. 5.2's accountant protocol, or Thm. 3's bound.
PAPER_CALIBRATIONS = ("accountant", "theorem3")


@dataclasses.dataclass(frozen=True, kw_only=True)
class PrimaConfig(Config):
    """Hyper-parameters of PRIMA / PRISA (ε and δ are each party's budget)."""

    family: ClassVar[str] = "prima"

    source_release: str = param("auto", choices=SOURCE_RELEASES,
                                help="what the source releases: class statistics (sound default) or DP-SGD heads "
                                     "(the published design; 'auto' = class statistics in sound mode, heads in paper mode)")
    log_counts: bool = param(False, choices=(False, True), help="log(1 + x) before normalising (count features)")
    basis_dim: int | None = param(1024, optional=True, low=1,
                                  help="columns of the public random basis the source's rows are projected on (None: none)")
    center: bool = param(True, choices=(False, True),
                         help="centre prototypes on the released source mean and target rows on the target's own mean")
    target_pca: int | None = param(None, optional=True, low=1,
                                   help="target-side denoising: work in the top principal directions of the target's own "
                                        "centred rows (its own computation; the isotropic release noise outside them is dropped)")
    refinement: str = param("ot+st", choices=REFINEMENTS,
                            help="target-side refinement of the prototypes on its own rows (default fixed on "
                                 "GoogLeNet A→D, A→W, D→A, W→A: benchmarks/selection/classstats/README.md, round 4)")
    subspace_size: int = param(512, low=1, help="public subspace size p of the random partition (dpsgd_heads)")
    partition: str = param("random", choices=PARTITIONS, help="feature partition (forward selection is NOT private)")
    psd_repair: str = param("eig_clip", choices=PSD_REPAIRS, help="repair of the noisy blocks (post-processing)")
    alignment: str = param("coral", choices=ALIGNMENTS, help="per-subspace alignment of the heads protocol")
    sa_dim: int = param(64, low=1, help="SA eigenvectors per subspace (PRISA)")
    head: str = param("logreg", choices=("logreg", "mlp"), help="subspace head")
    hidden: tuple = param((256, 128), help="hidden widths of the mlp head")
    epochs: int = param(30, low=1, help="DP-SGD epochs")
    batch_size: int = param(25, low=1, help="expected DP-SGD batch size")
    lr: float = param(1.0, low=0.0, low_open=True, help="SGD learning rate")
    momentum: float = param(0.0, low=0.0, high=1.0, help="SGD momentum")
    max_grad_norm: float = param(1.0, low=0.0, low_open=True, help="DP-SGD clipping bound (public)")
    cov_budget_fraction: float = param(0.2, low=0.0, high=1.0, low_open=True,
                                       help="share of the source ε for its covariance (dpsgd_heads, sound)")
    joint: bool = param(True, choices=(False, True), help="one DP-SGD run over all heads (else one per subspace)")
    reg: float = param(1.0, low=0.0, help="CORAL ridge on unit-mean-diagonal covariances")
    noise_aware_reg: bool = param(True, choices=(False, True), help="raise the ridge by the noise's spectral scale")
    paper_calibration: str = param("accountant", choices=PAPER_CALIBRATIONS, cli=False,
                                   help="paper mode's DP-SGD noise: 'accountant' (σ calibrated so that the run spends ε, "
                                        "the paper's Sec. 5.2 σ = 4 protocol) or 'theorem3' (σ = √(2 ln(1.25/δ))/ε, "
                                        "its Thm. 3, at every step)")
    per_class_budget: bool = param(False, choices=(False, True), cli=False,
                                   help="paper mode, logreg heads: one binary model per class and subspace, each at ε/q "
                                        "(the paper's Sec. 5.2 budget split)")

    def protocol(self) -> str:
        """The resolved source release: class statistics in sound mode, DP-SGD heads in paper mode."""
        if self.source_release != "auto":
            return self.source_release
        return "dpsgd_heads" if self.privacy_mode == "paper" else "class_statistics"


@dataclasses.dataclass(frozen=True, kw_only=True)
class PrisaConfig(PrimaConfig):
    """PRISA: the heads protocol with Subspace Alignment (``sa_dim`` eigenvectors per subspace)."""

    source_release: str = param("dpsgd_heads", choices=SOURCE_RELEASES,
                                help="PRISA is the published subspace-alignment heads protocol")
    alignment: str = param("sa", choices=ALIGNMENTS, help="per-subspace alignment of the heads protocol")
