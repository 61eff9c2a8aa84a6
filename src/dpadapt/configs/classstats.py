"""Hyper-parameters of the class-statistics design (:mod:`dpadapt.classstats`) and its receiver's refinements."""

from __future__ import annotations

import dataclasses

from dpadapt.configs import base
from dpadapt.configs.base import param

STARTS = ("none", "kmeans", "ot", "cluster_match")
#: "<start>": nearest center after the start; "<start>+st": then self-training on the full features;
#: "self_training": k-means, then logistic regression in the working space.
REFINEMENTS = STARTS + ("self_training",) + tuple(f"{s}+st" for s in STARTS) + ("prototypes",)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Config(base.Config):
    """Hyper-parameters of the class-statistics design (defaults fixed on pairs other than DeCAF6 D↔W)."""

    family = "classstats"

    k: int = param(20, low=0, help="dimension of the receiver's basis (top-k PCA); 0 = no basis, release in the mapped feature space")
    feature_type: str = param("dense", choices=("dense", "counts"), help="public feature type: 'counts' (bag of words) turns on log1p under log1p='auto'")
    log1p: str = param("auto", choices=("auto", "true", "false"), help="log1p of counts before normalising; 'auto' decides from the public feature_type, never from the data")
    relation: str = param("replace_one", choices=("replace_one", "add_remove"), help="neighbouring relation of the guarantee")
    refinement: str = param("ot", choices=REFINEMENTS, help="receiver-side refinement from the DP prototypes")

    def use_log1p(self) -> bool:
        return self.log1p == "true" or (self.log1p == "auto" and self.feature_type == "counts")
