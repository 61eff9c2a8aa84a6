"""Hyper-parameters of the sound designs (:mod:`dpadapt.sound`); everything else comes from the public selection rule."""

from __future__ import annotations

import dataclasses

from dpadapt.configs import base
from dpadapt.configs.base import param


@dataclasses.dataclass(frozen=True, kw_only=True)
class Config(base.Config):
    """Hyper-parameters of the sound designs; everything else comes from the public selection rule."""

    family = "sound"

    feature_type: str = param("dense", choices=("dense", "counts", "table"),
                              help="public feature type: 'counts' (bag of words: log1p), 'table' (columns scaled to [-1, 1] by a declared schema)")
    relation: str = param("replace_one", choices=("replace_one", "add_remove"), help="neighbouring relation of the guarantee")

    def use_log1p(self) -> bool:
        return self.feature_type == "counts"
