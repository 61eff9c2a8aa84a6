"""Hyper-parameters of DPOT (:mod:`dpadapt.transport.da`): the class-statistics design and the per-row design."""

from __future__ import annotations

import dataclasses

from dpadapt.configs import classstats
from dpadapt.configs.base import ConfigError, param

#: Scalings of the cost before the OT solver: double-centred / max |·| (ours), or one of POT's
#: ``cost_normalization`` options ("max", "median", "log", "loglog").
COST_NORMS: tuple[str, ...] = ("centred_max", "max", "median", "log", "loglog")

#: Why sound mode refuses the per-row design. With minibatches its accounting is wrong
#: (public or randomized-response labels); the whole-batch release is sound but loses everywhere (≈ chance
#: accuracy), so the estimator and the CLI refuse it too; ``release_dpot_source`` keeps it as a library call.
SOUND_ROWS_REFUSED = (
    "the per-row DPOT design is refused in sound mode: with minibatches every released row carries its label, so a "
    "record alone in its (noisy) class is identified at each appearance and the amplification by subsampling does not "
    "hold (n=1000, B=10, T=1000, claimed ε=2 at δ=1e-4: really ε=12.5 with public labels), and the whole-batch release "
    "is near chance; use the class-statistics design (design='auto'), or privacy_mode='paper' for the published procedure"
)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Config(classstats.Config):
    """DPOT's hyper-parameters: the class-statistics design (sound default) and the per-row design.

    ``design="auto"`` is, in sound mode, the sound route's prototypes design (the target's request →
    ONE Gaussian release of the source's class sums and counts → the prototypes refined by OT on the
    target's rows: :func:`dpadapt.transport.da.sound_config`), and the published per-row procedure in paper
    mode. ``design="rows"`` is refused in sound mode (:data:`SOUND_ROWS_REFUSED`). ``k`` and ``refinement``
    (inherited) are not read in sound mode, and refused when set.
    """

    family = "dpot"

    design: str = param("auto", choices=("auto", "classstats", "rows"), help="'auto': class statistics in sound mode, the published per-row release in paper mode; 'rows': per-row release (weak)")
    batch_size: int | None = param(None, optional=True, low=1, help="rows design: minibatch size B (None = one whole-batch release)")
    noise_multiplier: float = param(1.1, low=0.0, low_open=True, help="rows design, minibatches: z = σ/Δ (paper: σ/w)")
    steps: int | None = param(None, optional=True, low=1, help="rows design, minibatches: fix T and calibrate z")
    label_epsilon: float | None = param(None, optional=True, low=0.0, low_open=True, help="rows design: ε′ of the labels (sound default 0.25 ε)")
    labels: str = param("rr", choices=("rr", "public"), help="rows design: randomized response, or labels declared public")
    proj_dim: int | None = param(None, optional=True, low=1, help="rows design: projection dimension ℓ (default ⌈d/10⌉)")
    row_norm: str | None = param(None, optional=True, choices=("normalize", "clip", "none"), help="rows design: per-row preprocessing")
    clip_norm: float = param(1.0, low=0.0, low_open=True, help="rows design: public row norm C")
    projection: str = param("jl", choices=("jl", "identity"), help="rows design: JL matrix or none")
    ot_method: str = param("sinkhorn_gl", choices=("exact", "sinkhorn", "sinkhorn_gl"), help="rows design: OT solver")
    reg_e: float = param(0.01, low=0.0, help="rows design: entropic weight λ_e")
    reg_g: float = param(0.1, low=0.0, help="rows design: group-lasso weight λ_g")
    head: str = param("mlp", choices=("mlp", "logreg"), help="rows design: classifier head")
    cost_norm: str | None = param(None, optional=True, choices=COST_NORMS, cli=False,
                                  help="rows design: cost scaling before the solver (None: 'max', POT's norm='max', in "
                                       "paper mode; 'centred_max' otherwise)")
    target_batch_size: int | None = param(None, optional=True, low=1, help="rows design: target rows per minibatch")

    def resolved_design(self) -> str:
        if self.design == "auto":
            return "classstats" if self.privacy_mode == "sound" else "rows"
        if self.design == "classstats" and self.privacy_mode == "paper":
            raise ConfigError("paper mode is the published per-row procedure: use design='rows' or 'auto'")
        if self.design == "rows" and self.privacy_mode == "sound":
            raise ConfigError(SOUND_ROWS_REFUSED)
        return self.design
