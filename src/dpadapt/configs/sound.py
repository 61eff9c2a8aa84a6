"""Hyper-parameters of the sound default (:mod:`dpadapt.sound`); the design itself comes from the receiver's rows."""

from __future__ import annotations

import dataclasses

from dpadapt.configs import base
from dpadapt.configs.base import param


@dataclasses.dataclass(frozen=True, kw_only=True)
class Config(base.Config):
    """Hyper-parameters of the sound default; the design itself comes from the receiver's rows (:mod:`dpadapt.sound.design`)."""

    family = "sound"

    feature_type: str = param("auto", choices=("auto", "dense", "counts"),
                              help="'auto': log1p exactly when the receiver's rows are counts (non-negative whole numbers); "
                                   "'counts' / 'dense' declare it (a declaration the rows contradict is warned about)")
    design: str = param("auto", choices=("auto", "prototypes", "discriminant", "selection"),
                        help="'auto': the receiver's gap statistic chooses the post-processing; 'prototypes' (DPOT's transport "
                             "step) or 'discriminant' fix it (the basis size still follows the rule); 'selection': the sources "
                             "release a Laplace table of counts by label and nearest of the receiver's public k-means "
                             "candidates, matched to classes (pure ε, whatever d)")
    relation: str = param("replace_one", choices=("replace_one", "add_remove"), help="neighbouring relation of the guarantee")
    n_design: int | None = param(None, optional=True, low=1,
                                 help="under add/remove, the public size of each source the receiver designs for (n itself is "
                                      "private there and never read); ignored under replace-one, where n is public")

    score_share: float = param(0.0, low=0.0, high=0.9, cli=False,
                               help="share of each source's budget (in Gaussian DP's μ²) for a second, small release: per-class "
                                    "histograms of the fitted model's scores on the source's rows, which calibrate the model and "
                                    "estimate the target's prevalence with an interval (dpadapt.sound.scores); 0: no second release")
    score_bins: int = param(20, low=2, high=256, cli=False, help="bins of the binary score in the second release")
    score_confidence_bins: int | None = param(None, optional=True, low=1, high=64, cli=False,
                                              help="K > 2: bins of the top-class probability per predicted class in the second "
                                                   "release (K²·M cells); None: the public rule of dpadapt.sound.scores.confidence_bins")

    def design_size(self, n_source: int) -> int:
        """The source size the receiver may design for: ``n_source`` under replace-one (public), ``n_design`` under
        add/remove (n is private there and never read)."""
        if self.relation != "add_remove":
            return int(n_source)
        if self.n_design is None:
            raise base.ConfigError("relation='add_remove' needs n_design, a public estimate of each source's size: "
                                   "n is private under add/remove and the receiver's design may not depend on it")
        return int(self.n_design)
