"""The release request: what the unprotected receiver asks the protected source(s) to release.

The receiver designs the release on its own rows and public facts (:mod:`dpadapt.sound.design`) and
sends, in the clear, a :class:`Request`:

* the per-row map (``log1p`` or not, then ℓ2 normalisation) and the working space — its own mean and
  top-k principal directions (``"basis"``), or the mapped features themselves (``"features"``);
* which statistics: per-class sums and counts (``"sums"``), those and the pooled second moment
  (``"moments"``), or the counts of rows by label and nearest of its ``candidates`` (``"candidates"``: M aggregates
  of its own rows in the working space, k-means centres, declared public like its basis — never a raw row);
* the public facts it was designed for: the label set, the feature dimension, and per source its size
  n, (ε, δ) and neighbouring relation.

For a source the request is a fixed public per-row map chosen before any of its rows is read, so its
guarantee is that of the release alone. It is untrusted input all the same: :meth:`Request.from_release`
checks it (closed sets of names, a finite orthonormal basis with ‖mean‖ ≤ 1, shapes, its digest) before
any private row is touched. For the receiver the request is a disclosure of its own data (ε = ∞, not a DP
claim), which costs it nothing in this setting: the receiver is not protected (``docs/threat-model.md``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json

import numpy as np

from dpadapt.privacy.guarantee import Guarantee
from dpadapt.release import Release, ReleaseError
from dpadapt.sound.spaces import RowMap
from dpadapt.validation import check_basis, check_delta, check_epsilon

METHOD = "sound"
KIND = "release_request"
STATISTICS = ("sums", "moments", "candidates")
RELATIONS = ("replace_one", "add_remove")
#: Why the request costs the receiver nothing in this setting (``docs/threat-model.md``).
DISCLOSURE = (
    "disclosed by the receiver, which is not protected in this setting (only the labelled sources are): its release "
    "request — the per-row map, the mean and top principal directions of its own rows (and, for the selection design, "
    "k-means centres of them), which statistics to release — "
    "is sent in the clear; it depends on no source data, so for each source it is a fixed public per-row map"
)

#: The largest working space a request may ask for: the source holds a k × k second moment (8 bytes each).
MAX_K = 8192
#: The most candidates a request may name (the source holds a K × M table of counts).
MAX_CANDIDATES = 4096


@dataclasses.dataclass(frozen=True)
class SourceFacts:
    """The public facts of one source the request was designed for."""

    n_source: int
    epsilon: float | None
    delta: float | None
    relation: str = "replace_one"

    def __post_init__(self) -> None:
        if int(self.n_source) < 1:
            raise ValueError(f"n_source must be ≥ 1, got {self.n_source}")
        if self.relation not in RELATIONS:
            raise ValueError(f"relation must be one of {RELATIONS}, got {self.relation!r}")
        if (self.epsilon is None) != (self.delta is None):
            raise ValueError("a source is private (ε and δ given) or not (neither)")
        if self.epsilon is not None:
            check_epsilon(self.epsilon)
            check_delta(self.delta)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Request:
    """The receiver's design of the release (see the module docstring); ``design`` holds the stated
    quantities it was chosen from (σ, the noise level, the spectrum threshold, …) for the report."""

    classes: tuple
    n_features: int
    log1p: bool
    statistics: str
    sources: tuple[SourceFacts, ...]
    mean: np.ndarray | None = None
    components: np.ndarray | None = None
    design: dict = dataclasses.field(default_factory=dict)
    candidates: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.statistics not in STATISTICS:
            raise ValueError(f"statistics must be one of {STATISTICS}, got {self.statistics!r}")
        if len(self.classes) < 2 or len(set(self.classes)) != len(self.classes):
            raise ValueError("the public label set needs at least two distinct classes")
        if not self.sources:
            raise ValueError("a request names at least one source")
        if (self.mean is None) != (self.components is None):
            raise ValueError("a basis has both a mean and components")
        k = self.k
        if not 1 <= k <= MAX_K:
            raise ValueError(f"the working space has k = {k}; a request allows 1 ≤ k ≤ {MAX_K}")
        if (self.statistics == "candidates") != (self.candidates is not None):
            raise ValueError("the candidates statistics need the request's candidates, and only they")
        if self.candidates is not None:
            check_candidates(self.candidates, len(self.classes), k)

    @property
    def space(self) -> str:
        return "features" if self.components is None else "basis"

    @property
    def k(self) -> int:
        """Dimension of the working space."""
        return int(self.n_features if self.components is None else self.components.shape[1])

    def row_map(self) -> RowMap:
        return RowMap(self.log1p, self.mean, self.components)

    def _public(self) -> dict:
        return {"classes": list(self.classes), "n_features": int(self.n_features), "log1p": bool(self.log1p),
                "statistics": self.statistics, "sources": [s.to_dict() for s in self.sources], "space": self.space,
                "k": self.k, **({"num_candidates": self.num_candidates} if self.candidates is not None else {})}

    @property
    def num_candidates(self) -> int:
        """M, the number of public candidates (0 without)."""
        return 0 if self.candidates is None else int(self.candidates.shape[0])

    def digest(self) -> str:
        """SHA-256 of everything the source's release depends on (the map, the space, the statistics, the facts)."""
        h = hashlib.sha256(json.dumps(self._public(), sort_keys=True, default=str).encode())
        for a in (self.mean, self.components, self.candidates):
            if a is not None:
                h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
        return h.hexdigest()

    def to_release(self) -> Release:
        """The request as a Release of the receiver (a disclosure: ε = ∞, with the reason)."""
        arrays = {} if self.components is None else {"mean": self.mean, "components": self.components}
        if self.candidates is not None:
            arrays["candidates"] = self.candidates
        g = dataclasses.replace(Guarantee.non_private("target", DISCLOSURE),
                                details={"disclosed": f"its release request ({self.space}, k = {self.k})"})
        # its id is its digest's prefix: the one id a source's release names it by (one id in every place)
        return Release(method=METHOD, kind=KIND, owner="target", arrays=arrays, guarantee=g, release_id=self.digest()[:32],
                       params={**self._public(), "sha256": self.digest(), "design": self.design,
                               "disclosure": g.reasons[0]})

    @classmethod
    def from_release(cls, rel: Release, n_features: int | None = None) -> Request:
        """The request in ``rel``, checked as untrusted input (one-line :class:`ReleaseError` otherwise)."""
        d, mean, components = working_space(rel, KIND, n_features, what="release request")
        p = rel.params
        try:
            if p["space"] == "features" and rel.arrays:
                raise ValueError(f"unknown working space {p['space']!r}")
            if p["log1p"] not in (True, False):
                raise ValueError("'log1p' must be true or false")
            req = cls(classes=tuple(p["classes"]), n_features=d, log1p=bool(p["log1p"]), statistics=p["statistics"],
                      sources=tuple(SourceFacts(**s) for s in p["sources"]), mean=mean, components=components,
                      design=dict(p.get("design") or {}),
                      candidates=rel.arrays.get("candidates") if p["statistics"] == "candidates" else None)
        except (KeyError, TypeError, ValueError) as exc:
            raise ReleaseError(f"release request: {exc}") from None
        if req.k != int(p.get("k", -1)) or req.digest() != p.get("sha256"):
            raise ReleaseError("release request: its arrays and parameters do not match its digest; refused")
        return req

    def mismatch(self, n_source: int, epsilon: float | None, delta: float | None, relation: str) -> str | None:
        """``None`` when a source with these facts is one the request was designed for, else what differs (one line)."""
        for s in self.sources:
            same_n = relation == "add_remove" or int(s.n_source) == int(n_source)
            if same_n and s.relation == relation and _close(s.epsilon, epsilon) and _close(s.delta, delta):
                return None
        wanted = "; ".join(f"n = {s.n_source}, ε = {s.epsilon}, δ = {s.delta:g}" if s.delta else f"n = {s.n_source}, non-private"
                           for s in self.sources)
        mine = f"n = {n_source}, ε = {epsilon}, δ = {delta:g}" if delta else f"n = {n_source}, non-private"
        return (f"the release request was designed for [{wanted}] ({self.sources[0].relation}), this release is for "
                f"{mine} ({relation}): the receiver's design assumed another noise level; ask it for a request with "
                "these facts for the best model")


def working_space(rel: Release, kind: str, n_features: int | None, *, what: str
                  ) -> tuple[int, np.ndarray | None, np.ndarray | None]:
    """(d, mean, components) a received sound request file of ``kind`` declares — its feature dimension (``n_features``,
    when given, must agree) and its basis, checked (:func:`dpadapt.validation.check_basis`), or ``None`` for the
    features themselves. A one-line :class:`ReleaseError` (prefixed by ``what``) otherwise."""
    if rel.method != METHOD or rel.kind != kind:
        raise ReleaseError(f"expected a {METHOD}/{kind} file, got {rel.method}/{rel.kind}")
    p = rel.params
    try:
        d = int(p["n_features"])
        if n_features is not None and d != n_features:
            raise ValueError(f"it is for {d} features; your data have {n_features}")
        if p["space"] == "basis":
            return (d, *check_basis(rel["mean"], rel["components"], d))
        if p["space"] != "features":
            raise ValueError(f"unknown working space {p['space']!r}")
    except (KeyError, TypeError, ValueError) as exc:
        raise ReleaseError(f"{what}: {exc}") from None
    return d, None, None


def check_candidates(candidates, K: int, k: int) -> np.ndarray:
    """The request's candidates as untrusted input: a finite (M, k) float array, K ≤ M ≤ :data:`MAX_CANDIDATES`, every
    row in the unit ball (they are aggregates of unit rows); ValueError (one line) otherwise."""
    C = np.asarray(candidates)
    if C.ndim != 2 or C.shape[1] != k or not K <= C.shape[0] <= MAX_CANDIDATES:
        raise ValueError(f"the candidates must be an (M, {k}) array with {K} ≤ M ≤ {MAX_CANDIDATES}, got shape {C.shape}")
    if not np.issubdtype(C.dtype, np.floating) or not np.all(np.isfinite(C)):
        raise ValueError("the candidates must be finite floats")
    if np.any(np.linalg.norm(C, axis=1) > 1.0 + 1e-9):
        raise ValueError("every candidate must lie in the unit ball")
    return C


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(float(a) - float(b)) <= 1e-9 * max(abs(float(a)), abs(float(b)))
