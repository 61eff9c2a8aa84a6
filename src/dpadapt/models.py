"""Classifier heads shared by methods and baselines (scikit-learn)."""

from __future__ import annotations

from typing import Literal

from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

Head = Literal["logreg", "mlp"]
HEADS: tuple[str, ...] = ("logreg", "mlp")


def make_classifier(head: Head = "logreg", random_state: int | None = None, sparse: bool = False) -> Pipeline:
    """A standardising pipeline ending in logistic regression or a 3-layer network.

    ``"mlp"`` is the 3-layer network (input → 256 → 128 → classes, ReLU, Adam) used as the
    paper-style head for DPOT/PRIMA; ``"logreg"`` is multinomial logistic regression. Dense inputs
    are standardised with statistics of the training rows the classifier sees (which belong to
    the party training it).
    """
    # Sparse count features (bag of words) are used as they are: standardising rare terms
    # inflates them and costs ~6 points on Amazon.
    scaler = "passthrough" if sparse else StandardScaler()
    if head == "logreg":
        clf = LogisticRegression(C=1.0, max_iter=3000, random_state=random_state)
    elif head == "mlp":
        clf = MLPClassifier(
            hidden_layer_sizes=(256, 128), alpha=1e-3, max_iter=300, random_state=random_state
        )
    else:
        raise ValueError(f"head must be one of {HEADS}, got {head!r}")
    return make_pipeline(scaler, clf)
