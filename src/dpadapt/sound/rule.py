"""The selection rule of the sound designs: public facts → one concrete choice (issue 23).

Fixed on the development pairs only (Office-Caltech GoogLeNet A→D, A→W, D→A, W→A; SURF A→C, C→A, A→D,
C→W; Amazon bow5000 K→B, D→E, B→K, E→D; UCI Heart Cleveland ↔ Hungary) and written down in
``benchmarks/sound_selection_rule.md`` before any report-pair run. It reads only public facts: the
declared feature type, the source size n and the number of classes K (the public label set), the
feature dimension d and ε. Never a target label, never a private statistic.
"""

from __future__ import annotations

import dataclasses

DESIGNS = ("ssp",)


@dataclasses.dataclass(frozen=True)
class Choice:
    """One concrete sound design: space, basis size k, ridge constants and the guarded refinement."""

    design: str
    space: str
    k: int
    norm: str
    ridge_scale: float
    ridge_floor: float
    refinement: str
    min_agreement: float

    def to_params(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_params(cls, params: dict) -> Choice:
        return cls(**{f.name: params[f.name] for f in dataclasses.fields(cls)})


def choose(*, feature_type: str, n: int, n_classes: int, n_features: int, epsilon: float | None) -> Choice:
    """The rule (see ``benchmarks/sound_selection_rule.md``): public facts in, a :class:`Choice` out."""
    if feature_type == "table":
        return Choice("ssp", "features", 0, "box", 1.0, 1e-2, "none", 1.0)
    return Choice("ssp", "pca", 20, "l2", 1.0, 1e-2, "guarded", 0.9)
