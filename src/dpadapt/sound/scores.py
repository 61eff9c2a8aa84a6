"""The second, calibrating release: per-class histograms of the receiver's fitted model's scores on the source's rows.

After the first release the receiver's model (:class:`~dpadapt.sound.receiver.SoundModel`) is post-processing of
that release and of the receiver's own rows, so it may be sent to the sources. Three steps, in the sound
default's shape:

(a) :func:`request` — the receiver sends a :class:`ScoreRequest`: the model and B public bins, in one of two layouts
    the request states (:data:`LAYOUTS`). For a binary outcome (``"logit"``) the score is the model's log-likelihood
    ratio ``s₁ − s₀`` and the bins' interior edges are quantiles of the receiver's own scores (receiver data: public to
    the source). For K > 2 (``"class-confidence"``) a row's cell is (its predicted class ĵ, the bin of its top-class
    probability max_y softmax(s)_y among M confidence bins): B = K·M, the interior confidence edges quantiles of the
    receiver's own rows' top-class probabilities. Summed over the confidence bins the table is the DP confusion matrix
    (M = 1 is exactly that matrix), so BBSE reads its marginal (:meth:`ScoreRequest.confusion`).
(b) :func:`plan` / :func:`release` — each source checks the request as untrusted input, bins every row and releases
    the (K, B) counts by label and bin as ONE Gaussian with vetted discrete noise
    (:func:`dpadapt.privacy.mechanisms.release_score_histogram`). *Theorem (either layout).* A row's cell — (its label,
    its logit's bin) or (its label, ĵ·M + its top-class probability's bin) — is a function of that row alone, the model
    and the edges being public and fixed before any source row is read, and every finite row has exactly one (a
    non-finite score is mapped to an edge bin, :func:`top_class`); so the table is a sum of one-hot rows: replacing
    one row moves at most two cells by one, Δ₂ = √2, adding or removing one moves one cell, Δ₂ = 1, whatever the
    model, K, M or n. ONE Gaussian of σ = z·Δ₂ is then (ε, δ)-DP by the analytic Gaussian (Balle & Wang 2018, Thm. 8),
    labels included (a patient with r rows: r·Δ, :mod:`dpadapt.privacy.group`).
    :func:`dpadapt.privacy.families.sound.split_budget` splits one (ε, δ) between the two releases so that they
    compose exactly into it; released separately (the CLI) each is charged to the ledger, which composes them.
(c) :func:`adapt` — the receiver, from the noisy counts alone (post-processing, no further cost):

    * **calibration** (binary): Platt's logistic map ``σ(a·logit + c)`` fitted by weighted maximum likelihood to the
      noisy per-bin counts (negative counts clipped at 0; each bin at the mean score of the receiver's rows in it);
      it is monotone in the logit, so the ranking (ROC-AUC) is unchanged;
    * **calibration** (K > 2): one temperature 1/a on the log-likelihood part of the scores (the model's own DP prior
      kept), fitted by reweighted least squares to the noisy (K, K·M) counts as released — each count modelled as its
      cell's total times the mean tempered posterior of the receiver's rows in the cell, weighted by the variance of
      that count (multinomial plus the public release noise σ²), the noise's known share of each squared residual
      taken out — so that negative and small counts need no clipping
      (:func:`fit_temperature`), and applied only at an interior optimum where refits with a second draw of the
      public noise agree that a ≠ 1 (:func:`temperature_shown`); a > 0 keeps each row's ranking of the classes by likelihood (predictions move only
      where the prior decides);
    * **the target's prevalence**: the target's own score histogram matched by a mixture of the source's per-class
      histograms (BBSE, Lipton et al. 2018, with the soft confusion matrix of binned scores; solved by maximum
      likelihood under the mixture, which keeps the weights non-negative and summing to one); ``"match-ls"``, BBSE's
      least squares, reads the confusion matrix for K > 2;
    * **its interval**: percentiles over resamples that redraw the release (each class's counts redrawn from the
      estimated class histogram, multinomial, plus Gaussian noise of the public σ) together with a bootstrap of the
      receiver's rows — it states the release noise, not only the target's sampling (``"resample"``). A shift between
      the domains beyond the prior is a bias no resample contains; :data:`INTERVALS` offers intervals that state it
      from the same release and rows: the hull of the estimators' intervals, or the resample interval widened by the
      residual of the receiver's score histogram against the released histograms mixed at the estimate (:func:`residual`).

Which calibration and prevalence estimator is used by default (binary: :data:`PREVALENCE`, the residual gate of
:func:`gate` between EM and the mean calibrated posterior; K > 2: :data:`PREVALENCE_MULTICLASS`) was chosen on
development cases by the rules of ``benchmarks/decisions/README.md``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math

import numpy as np

from dpadapt.privacy import mechanisms
from dpadapt.privacy.families.sound import score_histogram_plan
from dpadapt.privacy.guarantee import Guarantee
from dpadapt.release import Release, ReleaseError
from dpadapt.sound.receiver import SoundModel
from dpadapt.sound.request import METHOD, working_space
from dpadapt.validation import check_declared_sigma, check_released_size, check_untrusted_array

REQUEST_KIND = "score_request"
KIND = "score_histograms"
#: Bins of the binary score by default, and the most a request may ask for (all cells, B, for K > 2 too).
DEFAULT_BINS = 10
MAX_BINS = 256
#: The request's layouts of the table (module docstring): the binary logit's bins; (predicted class × confidence bin).
LAYOUTS = ("logit", "class-confidence")
#: K > 2: the release has K²·M cells, each with the same noise, so M is kept small: at most this many cells for the
#: default M (and M between 1 and :data:`MAX_CONFIDENCE_BINS`) — a public rule of K alone (:func:`confidence_bins`).
DEFAULT_CELLS = 64
MAX_CONFIDENCE_BINS = 4
#: The calibration maps and prevalence estimators built on the histograms; the defaults were chosen by the rule of
#: ``benchmarks/decisions/README.md`` on its development cells (``results/decisions-scores-tables.md``).
CALIBRATIONS = ("platt", "temperature")
PREVALENCES = ("match", "match-ls", "em", "mean", "gated")
CALIBRATION = "platt"
#: The binary default: ``"gated"`` (:func:`gate`), :data:`GATE_ARM` where label shift explains the receiver's score
#: histogram — the residual of the best mixture of the released class histograms, less its expected value under label
#: shift with the public σ, at most :data:`GATE_THRESHOLD` (total variation) — else ``"mean"``. Estimator, arm and
#: threshold (public constants) were chosen by the rule "a residual-gated prevalence estimator" of
#: ``benchmarks/decisions/README.md`` (``results/decisions-gate.md``); :data:`GATE_RESAMPLES` null draws.
PREVALENCE = "gated"
GATE_ARM = "em"
GATE_THRESHOLD = 0.05
GATE_RESAMPLES = 200
#: K > 2 (the ``class-confidence`` layout): chosen by the rule "K > 2 prevalence default" of the same README on its
#: synthetic and GoogLeNet development cells (``results/multiclass-prevalence-rule.md``).
PREVALENCE_MULTICLASS = "em"
#: The prevalence's interval (:func:`estimate`): ``resample`` (release noise and the receiver's rows), ``hull`` (of the
#: :data:`HULL` estimators' intervals), ``residual`` / ``residual-tv`` (widened by the mixture-fit residual,
#: :func:`residual`). The default is set by the rule "an interval that states the shift between units" of
#: ``benchmarks/decisions/README.md``.
INTERVALS = ("resample", "hull", "residual", "residual-tv")
INTERVAL = "resample"
HULL = ("match", "em", "mean")
#: The public seed of the interval's resamples (reproducible; not privacy noise).
RESAMPLE_SEED = 20261130
DISCLOSURE = ("disclosed by the receiver, which is not protected in this setting: its fitted model (post-processing of "
              "the first release and of its own rows) and bin edges from its own scores, sent in the clear")


def confidence_bins(K: int) -> int:
    """The default number M of confidence bins for K > 2 classes: ⌊:data:`DEFAULT_CELLS` / K²⌋ within
    1..:data:`MAX_CONFIDENCE_BINS` (K = 3: 4 bins, 36 cells; K = 4: 4, 64; K = 10: 1, the confusion matrix's 100)."""
    return int(min(MAX_CONFIDENCE_BINS, max(1, DEFAULT_CELLS // (K * K))))


def top_class(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(predicted class, its softmax probability) of each row of the scores ``s`` (n, K); a non-finite score is read as
    0 (NaN) or the largest finite value, so every row gets a class and a probability in [1/K, 1]."""
    s = np.nan_to_num(np.asarray(s, dtype=np.float64), nan=0.0)
    j = np.argmax(s, axis=1)
    with np.errstate(over="ignore", invalid="ignore"):
        top = np.take_along_axis(s, j[:, None], axis=1)
        conf = 1.0 / np.sum(np.exp(np.minimum(s - top, 0.0)), axis=1)
    return j.astype(np.int64), np.nan_to_num(conf, nan=1.0 / s.shape[1])


@dataclasses.dataclass(frozen=True)
class ScoreRequest:
    """The receiver's model (map, W, b) and the public bins: ``edges``, the interior edges of the binary logit
    (``"logit"``, B = len(edges) + 1) or of the top-class probability (K > 2, ``"class-confidence"``: M = len(edges) + 1
    confidence bins, B = K·M cells)."""

    classes: tuple
    n_features: int
    log1p: bool
    mean: np.ndarray | None
    components: np.ndarray | None
    W: np.ndarray
    b: np.ndarray
    edges: np.ndarray

    @property
    def layout(self) -> str:
        return "logit" if len(self.classes) == 2 else "class-confidence"

    @property
    def num_bins(self) -> int:
        m = int(self.edges.size) + 1
        return m if self.layout == "logit" else len(self.classes) * m

    def model(self) -> SoundModel:
        return SoundModel(np.asarray(self.classes), self.log1p, self.mean, self.components, self.W, self.b, "score request")

    def scores(self, X) -> np.ndarray:
        """The public score of each row: the logit ``s₁ − s₀`` (binary) or the scores (n, K)."""
        s = self.model().decision_function(X)
        return s[:, 1] - s[:, 0] if self.layout == "logit" else s

    def bins(self, X) -> np.ndarray:
        """One bin index in ``0..B−1`` per row, whatever the row (a non-finite score falls in an edge bin)."""
        return self.cells(self.scores(X))

    def cells(self, s: np.ndarray) -> np.ndarray:
        """The bin of each public score ``s`` (:meth:`scores`): the logit's bin, or ĵ·M + the top-class probability's bin."""
        m = int(self.edges.size) + 1
        if self.layout == "logit":
            return np.clip(np.searchsorted(self.edges, s, side="right"), 0, m - 1).astype(np.int64)
        j, conf = top_class(s)
        return j * m + np.clip(np.searchsorted(self.edges, conf, side="right"), 0, m - 1).astype(np.int64)

    def confusion(self, counts: np.ndarray) -> np.ndarray:
        """The (K, K) confusion matrix (rows: true class, columns: predicted) of a (K, K·M) table: its confidence bins
        summed (``counts`` (…, K·M) also: the target's per-cell counts → its predicted-class counts)."""
        counts = np.asarray(counts, dtype=np.float64)
        return counts.reshape(*counts.shape[:-1], len(self.classes), -1).sum(axis=-1)

    def _public(self) -> dict:
        return {"classes": list(self.classes), "n_features": int(self.n_features), "log1p": bool(self.log1p),
                "space": "features" if self.components is None else "basis", "num_bins": self.num_bins,
                "score": self.layout, **({} if self.layout == "logit" else {"confidence_bins": int(self.edges.size) + 1})}

    def describe(self) -> str:
        if self.layout == "logit":
            return f"{self.num_bins} bins of the logit"
        return f"predicted class × {self.edges.size + 1} confidence bins ({self.num_bins} cells)"

    def digest(self) -> str:
        h = hashlib.sha256(json.dumps(self._public(), sort_keys=True).encode())
        for a in (self.mean, self.components, self.W, self.b, self.edges):
            if a is not None:
                h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
        return h.hexdigest()

    def to_release(self) -> Release:
        arrays = {"W": self.W, "b": self.b, "edges": self.edges,
                  **({} if self.components is None else {"mean": self.mean, "components": self.components})}
        g = dataclasses.replace(Guarantee.non_private("target", DISCLOSURE), details={"disclosed": "its fitted model"})
        return Release(method=METHOD, kind=REQUEST_KIND, owner="target", arrays=arrays, guarantee=g,
                       release_id=self.digest()[:32], params=self._public())

    @classmethod
    def from_release(cls, rel: Release, n_features: int | None = None) -> ScoreRequest:
        """The score request in ``rel``, checked as untrusted input (one-line :class:`ReleaseError` otherwise): its stated
        layout must be the one of its label set, and its bin count the one its edges give."""
        d, mean, components = working_space(rel, REQUEST_KIND, n_features, what="score request")
        p = rel.params
        try:
            K = len(p["classes"])
            if K < 2 or len(set(map(str, p["classes"]))) != K or p["log1p"] not in (True, False):
                raise ValueError("a label set of at least two distinct classes and a log1p flag are needed")
            k = d if components is None else components.shape[1]
            W = check_untrusted_array(rel["W"], "the model's 'W'", (K, k))
            b = check_untrusted_array(rel["b"], "the model's 'b'", (K,))
            layout = "logit" if K == 2 else "class-confidence"
            if p["score"] != layout:
                raise ValueError(f"layout {p['score']!r} stated for {K} classes; {K} classes are binned as {layout!r}")
            m = int(p["num_bins"]) if layout == "logit" else int(p["confidence_bins"])
            B = m if layout == "logit" else K * m
            if int(p["num_bins"]) != B or not 1 <= m <= MAX_BINS or not 1 <= B <= MAX_BINS:
                raise ValueError(f"{p['num_bins']} bins stated; its layout {layout!r} gives {B} (at most {MAX_BINS})")
            edges = check_untrusted_array(rel["edges"], "the bin edges", (m - 1,))
            if np.any(np.diff(edges) <= 0) or (layout == "logit" and m < 2) or \
                    (layout != "logit" and np.any((edges <= 1.0 / K) | (edges >= 1.0))):
                raise ValueError("the bin edges must be strictly increasing (confidence edges inside (1/K, 1))")
            req = cls(tuple(p["classes"]), d, bool(p["log1p"]), mean, components, W, b, edges)
        except (KeyError, TypeError, ValueError) as exc:
            raise ReleaseError(f"score request: {exc}") from None
        if req.digest()[:32] != rel.release_id:
            raise ReleaseError("score request: its arrays and parameters do not match its id; refused")
        return req


def request(model: SoundModel, Zt_or_Xt, *, bins: int | None = None, confidence: int | None = None,
            n_features: int | None = None) -> ScoreRequest:
    """(a) The receiver's score request for ``model``: binary, ``bins`` (default :data:`DEFAULT_BINS`) bins of the logit
    at the quantiles of its own rows' logits; K > 2, ``confidence`` (default :func:`confidence_bins`) confidence bins at
    the quantiles of its own rows' top-class probabilities (``Zt_or_Xt``: its raw rows)."""
    K = len(model.classes)
    s = model.decision_function(Zt_or_Xt)
    if K == 2:
        m = DEFAULT_BINS if bins is None else int(bins)
        if not 2 <= m <= MAX_BINS:
            raise ValueError(f"bins must be in 2..{MAX_BINS}, got {m}")
        x = s[:, 1] - s[:, 0]
        lo = -np.inf
    else:
        m = confidence_bins(K) if confidence is None else int(confidence)
        if not 1 <= m <= MAX_BINS // K:
            raise ValueError(f"confidence bins must be in 1..{MAX_BINS // K} for {K} classes, got {m}")
        x = top_class(s)[1]
        lo = 1.0 / K
    edges = np.unique(np.quantile(x, np.arange(1, m) / m)) if x.size else np.zeros(0)
    if K == 2 and edges.size == 0:
        edges = np.array([0.0])
    if K > 2 and (edges.size != m - 1 or np.any((edges <= lo) | (edges >= 1.0))):
        edges = lo + (1.0 - lo) * np.arange(1, m) / m  # tied or saturated quantiles: an even grid, so M stays as asked
    d = int(n_features if n_features is not None else (model.components.shape[0] if model.components is not None
                                                        else model.W.shape[1]))
    return ScoreRequest(tuple(model.classes.tolist()), d, bool(model.log1p), model.mean, model.components,
                        np.asarray(model.W, dtype=np.float64), np.asarray(model.b, dtype=np.float64),
                        np.asarray(edges, dtype=np.float64))


# --- (b) the source ------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ScorePlan:
    """σ and the Guarantee of one source's score release (``sigma`` 0 and a non-private Guarantee for ε = None)."""

    sigma: float
    guarantee: Guarantee
    relation: str
    n_source: int
    request_id: str


def plan(score_request: ScoreRequest, epsilon: float | None, delta: float | None, *, n_source: int,
         relation: str = "replace_one") -> ScorePlan:
    """(b, before any row is read) σ from the analytic Gaussian at (ε, δ) for Δ = √2 / 1 (``epsilon=None``: no noise)."""
    rid = score_request.digest()[:32]
    if epsilon is None:
        return ScorePlan(0.0, Guarantee.non_private("source", "epsilon=None: the non-private counterpart"), relation,
                         int(n_source), rid)
    sigma, g = score_histogram_plan(epsilon, delta, classes=score_request.classes, num_bins=score_request.num_bins,
                                    relation=relation, layout=score_request.describe())
    return ScorePlan(sigma, g, relation, int(n_source), rid)


@dataclasses.dataclass
class ScoreCounts:
    """The exact (K, B) counts of the rows added so far by label and bin of ``score_request`` (an accumulator of
    :mod:`dpadapt.stream`: chunk by chunk here, or one per partition on Dask workers, merged)."""

    score_request: ScoreRequest
    counts: np.ndarray | None = None
    n_rows: int = 0

    def add(self, X, y) -> ScoreCounts:
        from dpadapt.stream.sums import _required_labels

        K, B = len(self.score_request.classes), self.score_request.num_bins
        part = mechanisms.score_histogram(self.score_request.bins(X), _required_labels(y, self.score_request.classes), K, B)
        self.counts = part if self.counts is None else self.counts + part
        self.n_rows += int(X.shape[0])
        return self

    def merge(self, other: ScoreCounts) -> ScoreCounts:
        if other.counts is not None:
            self.counts = other.counts.copy() if self.counts is None else self.counts + other.counts
            self.n_rows += other.n_rows
        return self


def _exact_counts(score_request: ScoreRequest, Xs, ys, *, client, label_column: str) -> ScoreCounts:
    """The exact counts of the source's rows: chunk by chunk here, or per partition on a Dask cluster (a ``dask.array``
    with its labels ``ys``, a ``dask.dataframe`` or a Parquet dataset with a ``label_column``), as the first release."""
    import functools

    from dpadapt.stream import dask_engine
    from dpadapt.stream.readers import labelled_source
    from dpadapt.stream.sums import accumulate

    empty = functools.partial(ScoreCounts, score_request)
    if dask_engine.is_parquet_dataset(Xs):
        Xs = dask_engine.read_parquet(Xs, label_column)
    if dask_engine.is_dask_collection(Xs):
        frame = hasattr(Xs, "columns")
        d = len([c for c in Xs.columns if c != label_column]) if frame else int(Xs.shape[1])
        if d != score_request.n_features:
            raise ValueError(f"the score request is for {score_request.n_features} features; the source has {d}")
        if frame:
            return dask_engine.sums_of_frame(Xs, label_column, empty, client=client)
        if ys is None:
            raise ValueError("a dask.array source needs its labels ys")
        return dask_engine.sums_of_array(Xs, ys, empty, client=client)
    source = labelled_source(Xs, ys, classes=tuple(score_request.classes))
    if source.n_features != score_request.n_features:
        raise ValueError(f"the score request is for {score_request.n_features} features; the source has {source.n_features}")
    return accumulate(empty(), source)


def release(plan_: ScorePlan, score_request: ScoreRequest, Xs, ys=None, noise=None, *, client=None,
            label_column: str = "y") -> Release:
    """(b) The source's (K, B) counts by label and bin, read chunk by chunk, or per partition on the Dask cluster of
    ``client`` (default: the current scheduler) for a ``dask.array`` with labels ``ys``, a ``dask.dataframe`` or a
    Parquet dataset with a ``label_column``; the noise drawn once, here."""
    if score_request.digest()[:32] != plan_.request_id:
        raise ValueError("the plan was made for another score request")
    K, B = len(score_request.classes), score_request.num_bins
    acc = _exact_counts(score_request, Xs, ys, client=client, label_column=label_column)
    counts, n = (np.zeros((K, B)) if acc.counts is None else acc.counts), acc.n_rows
    if n != plan_.n_source:
        raise ValueError(f"the plan is for {plan_.n_source} source rows, got {n}")
    if plan_.sigma > 0:
        counts = mechanisms.release_score_histogram(counts, sigma=plan_.sigma, relation=plan_.relation, noise=noise).value
    params = {"classes": list(score_request.classes), "score_request_release_id": plan_.request_id,
              "score": score_request.layout, "num_bins": B, "sigma": float(plan_.sigma), "relation": plan_.relation}
    if plan_.relation == "replace_one":
        params["n_source"] = int(n)
    return Release(method=METHOD, kind=KIND, owner="source", arrays={"counts": counts}, guarantee=plan_.guarantee,
                   params=params)


# --- (c) the receiver ------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Histograms:
    """The sources' counts added up (K, B), the effective σ (``sqrt(Σ σᵢ²)``) and the releases' guarantees."""

    counts: np.ndarray
    sigma: float
    guarantees: tuple

    def class_conditionals(self, counts: np.ndarray | None = None) -> np.ndarray:
        """(K, B) per-class score distributions: the noisy counts clipped at 0, each row normalised (uniform if empty)."""
        C = np.maximum(self.counts if counts is None else counts, 0.0)
        tot = C.sum(axis=-1, keepdims=True)
        return np.where(tot > 0, C / np.where(tot > 0, tot, 1.0), 1.0 / C.shape[-1])


def combine(score_request: ScoreRequest, releases: list[Release]) -> Histograms:
    """Add the score histograms of every source that answered ``score_request`` (each checked as untrusted input)."""
    stats = [r for r in releases if r.kind == KIND]
    if not stats:
        raise ReleaseError("no score histograms among the releases")
    if len({r.release_id for r in stats}) != len(stats):
        raise ReleaseError("the same score release was given twice (its counts would count twice); refused")
    K, B = len(score_request.classes), score_request.num_bins
    rid = score_request.digest()[:32]
    total, var, guarantees = np.zeros((K, B)), 0.0, []
    for r in stats:
        p = r.params
        if r.method != METHOD or p.get("score_request_release_id") != rid:
            raise ReleaseError(f"release {r.release_id[:12]} answers another score request than the one given; refused")
        if (p.get("score"), p.get("num_bins")) != (score_request.layout, B):
            raise ReleaseError(f"release {r.release_id[:12]} bins its rows as {p.get('score')!r} in {p.get('num_bins')} bins; "
                               f"the score request asks for {score_request.layout!r} in {B}; refused")
        if list(map(str, p.get("classes", []))) != list(map(str, score_request.classes)):
            raise ReleaseError(f"release {r.release_id[:12]} is for the label set {p.get('classes')}; refused")
        try:
            sigma = check_declared_sigma(p.get("sigma"), r.guarantee)
            n = check_released_size(p)
            counts = check_untrusted_array(r["counts"], "the released score 'counts'", (K, B))
            _check_plausible(counts, sigma, n)
        except ValueError as exc:
            raise ReleaseError(f"release {r.release_id[:12]}: {exc}") from None
        total += counts
        var += sigma**2
        guarantees.append(r.guarantee)
    return Histograms(total, math.sqrt(var), tuple(guarantees))


def _check_plausible(counts: np.ndarray, sigma: float, n: float | None, false_refusal: float = 1e-9) -> None:
    """Counts the declared mechanism could produce: each cell ≥ −tσ and ≤ n + tσ, their total within tσ√(KB) of n
    (n public), t = √(2 ln(m/p)) for the m = KB + 1 checks (an honest release is refused with probability ≤ p)."""
    m = counts.size + 1
    t = math.sqrt(2.0 * math.log(m / false_refusal))
    if np.any(np.abs(counts) > 1e15):
        raise ValueError("the counts are too large to come from any source")
    if np.any(counts < -t * sigma - 1e-9):
        raise ValueError(f"a count below −{t:.1f}σ cannot come from the declared mechanism; refused")
    if n is not None and (np.any(counts > n + t * sigma + 1e-9) or abs(counts.sum() - n) > t * sigma * math.sqrt(counts.size) + 1e-6):
        raise ValueError(f"the counts do not add up to the {n:g} rows the release states; refused")


def bin_scores(score_request: ScoreRequest, s_bins: np.ndarray, s: np.ndarray) -> np.ndarray:
    """A representative logit per bin: the mean of the receiver's rows' logits ``s`` in it, else the bin's edge midpoint."""
    e = score_request.edges
    B = score_request.num_bins
    width = float(np.diff(e).mean()) if e.size > 1 else 1.0
    lo = np.concatenate([[e[0] - width], e])
    hi = np.concatenate([e, [e[-1] + width]])
    rep = (lo + hi) / 2.0
    sums = np.bincount(s_bins, weights=s, minlength=B)
    cnt = np.bincount(s_bins, minlength=B)
    return np.where(cnt > 0, sums / np.maximum(cnt, 1), rep)


def platt(counts: np.ndarray, x: np.ndarray) -> tuple[float, float]:
    """(a, c) maximising Σ_b n₁b log σ(a x_b + c) + n₀b log σ(−(a x_b + c)) over the noisy counts clipped at 0
    (the concave binned log-likelihood, by L-BFGS; (1, 0) when a class has no count)."""
    from scipy.optimize import minimize
    from scipy.special import expit

    n0, n1 = np.maximum(counts[0], 0.0), np.maximum(counts[1], 0.0)
    if n1.sum() <= 0 or n0.sum() <= 0:
        return 1.0, 0.0
    scale = max(float(np.std(x)), 1e-12)
    u = (x - x.mean()) / scale  # standardised bin scores: a well-conditioned problem

    def nll(theta):
        z = theta[0] * u + theta[1]
        loss = float(np.sum(n1 * np.logaddexp(0.0, -z) + n0 * np.logaddexp(0.0, z)))
        p = expit(z)
        g = n0 * p - n1 * (1.0 - p)
        return loss, np.array([g @ u, g.sum()])

    theta = minimize(nll, np.array([1.0, math.log(n1.sum() / n0.sum())]), jac=True, method="L-BFGS-B").x
    a = float(theta[0]) / scale
    return a, float(theta[1]) - a * float(x.mean())


def match(conditionals: np.ndarray, target_counts: np.ndarray, *, max_iter: int = 500, tol: float = 1e-8) -> np.ndarray:
    """π maximising Σ_b h_b log Σ_y π_y C_yb — the target's bin counts ``h`` as a mixture of the class conditionals ``C``
    (K, B) — by EM (non-negative, sums to one). Batched: ``conditionals`` (R, K, B) and ``target_counts`` (R, B)."""
    C = np.asarray(conditionals, dtype=np.float64)
    h = np.asarray(target_counts, dtype=np.float64)
    single = C.ndim == 2
    C, h = (C[None], h[None]) if single else (C, h)
    C = np.maximum(C, 1e-12)
    K = C.shape[1]
    pi = np.full((C.shape[0], K), 1.0 / K)
    total = np.maximum(h.sum(axis=1, keepdims=True), 1e-12)
    for _ in range(max_iter):
        mix = np.einsum("rk,rkb->rb", pi, C)
        new = pi * np.einsum("rkb,rb->rk", C, h / mix) / total
        new /= new.sum(axis=1, keepdims=True)
        moved = float(np.abs(new - pi).max())
        pi = new
        if moved < tol:
            break
    return pi[0] if single else pi


def match_ls(counts: np.ndarray, target_counts: np.ndarray) -> np.ndarray:
    """π minimising ‖h/n_t − Σ_y π_y c̃_y/ñ_y‖² over the simplex (BBSE's least squares, Lipton et al. 2018) on the noisy
    counts as released (not clipped: their expectation is exact), ñ_y the clipped class totals."""
    from scipy.optimize import nnls

    C = np.asarray(counts, dtype=np.float64)
    M = (C / np.maximum(np.maximum(C, 0.0).sum(axis=1, keepdims=True), 1.0)).T  # (B, K)
    h = np.asarray(target_counts, dtype=np.float64)
    h = h / max(h.sum(), 1e-12)
    w = 1e3  # the sum-to-one constraint as a heavily weighted extra row
    pi, _ = nnls(np.vstack([M, w * np.ones(M.shape[1])]), np.concatenate([h, [w]]))
    return pi / max(pi.sum(), 1e-12)


def posteriors(W: np.ndarray, b: np.ndarray, Z: np.ndarray) -> np.ndarray:
    """Class probabilities of the scores ``Z @ W.T + b`` (softmax)."""
    from scipy.special import logsumexp

    s = Z @ W.T + b
    return np.exp(s - logsumexp(s, axis=1, keepdims=True))


def _cell_rows(score_request: ScoreRequest, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(scores, cell, weight) of the rows that stand for each cell in the temperature fit: the receiver's rows ``s``
    (n, K) in their cells, and for a cell none of them falls in one public stand-in (weight 1) — the log-probabilities of
    a row predicted as its class at its confidence bin's midpoint, the other classes equal."""
    K, B = len(score_request.classes), score_request.num_bins
    m = B // K
    cell = score_request.cells(s)
    empty = np.flatnonzero(np.bincount(cell, minlength=B) == 0)
    if empty.size == 0:
        return s, cell, np.ones(s.shape[0])
    bounds = np.concatenate([[1.0 / K], score_request.edges, [1.0]])
    q = np.clip((bounds[empty % m] + bounds[empty % m + 1]) / 2.0, 1.0 / K + 1e-9, 1.0 - 1e-9)
    stand = np.tile(np.log((1.0 - q) / (K - 1))[:, None], (1, K))
    stand[np.arange(empty.size), empty // m] = np.log(q)
    return np.vstack([s, stand]), np.concatenate([cell, empty]), np.ones(s.shape[0] + empty.size)


#: The search interval of the inverse temperature a (scores' log-likelihood part times a), and the reweighting rounds.
INVERSE_TEMPERATURE_RANGE = (0.02, 50.0)
REWEIGHTING_ROUNDS = 3
#: The check that the release shows a temperature (:func:`temperature_shown`): refits on redrawn tables, interval level.
GUARD_RESAMPLES = 40
GUARD_LEVEL = 0.9


def fit_temperature(counts: np.ndarray, s: np.ndarray, cell: np.ndarray, weight: np.ndarray, log_prior: np.ndarray,
                    sigma: float, *, rounds: int = REWEIGHTING_ROUNDS, start: float = 1.0) -> float:
    """The inverse temperature a fitted to the released (K, B) ``counts`` (K > 2) by Gaussian quasi-likelihood: count
    n_yc ≈ N(N_c p̄_yc(a), v_yc), N_c = Σ_y n_yc, p̄_yc(a) the weighted mean over the rows of cell c of
    softmax(a·(s − log π) + log π)_y (``s`` (n, K) their scores, π the model's prior) and v_yc = N_c p̄(1 − p̄) +
    σ²((1 − p̄)² + (K − 1)p̄²) — the multinomial's variance plus the public release noise, N_c's own noise included.
    Each round minimises Σ [(n_yc − N_c p̄_yc(a))² − σ²((1 − p̄)² + (K − 1)p̄²)] / v_yc with v at the previous round's a
    (from a = ``start``): iteratively reweighted least squares with the noise's known share of each squared residual taken
    out, so that the objective's expectation over the release noise is the noise-free one. (Left in, that share —
    smallest at p̄ = 1/K, N_c's noise being correlated with n_yc's — pulls towards flat posteriors; so would the full
    Gaussian likelihood's log-variance term.) The counts enter as released (no clipping, whose bias on the many small
    cells would read as errors). Post-processing of the release and the receiver's rows."""
    from scipy import sparse
    from scipy.optimize import minimize_scalar

    C = np.asarray(counts, dtype=np.float64)
    K, B = C.shape
    N = C.sum(axis=0)
    Nplus = np.maximum(N, 0.0)
    ll = s - log_prior
    share = np.bincount(cell, weights=weight, minlength=B)
    mean_in_cell = sparse.csr_matrix(  # row weights normalised within each cell: p̄ = (mean_in_cell @ P)ᵀ
        (weight / np.where(share > 0, share, 1.0)[cell], (cell, np.arange(cell.size))), shape=(B, cell.size))

    def pbar(log_a: float) -> np.ndarray:
        z = math.exp(log_a) * ll + log_prior
        z = np.exp(z - z.max(axis=1, keepdims=True))
        return np.clip((mean_in_cell @ (z / z.sum(axis=1, keepdims=True))).T, 1e-9, 1.0 - 1e-9)

    def noise(p: np.ndarray) -> np.ndarray:  # the release noise's variance in n_yc − N_c p: σ²((1 − p)² + (K − 1)p²)
        return sigma**2 * ((1.0 - p) ** 2 + (K - 1) * p**2)

    def objective(log_a: float, var: np.ndarray) -> float:
        p = pbar(log_a)
        return float(np.sum(((C - N * p) ** 2 - noise(p)) / var))

    lo, hi = (math.log(v) for v in INVERSE_TEMPERATURE_RANGE)
    log_a = math.log(start)
    for _ in range(rounds):
        p0 = pbar(log_a)
        var = Nplus * p0 * (1.0 - p0) + noise(p0) + 1e-6
        log_a = float(minimize_scalar(objective, args=(var,), bounds=(lo, hi), method="bounded",
                                      options={"xatol": 1e-3}).x)
    return float(math.exp(log_a))


def resample_counts(counts: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """One redraw of a released (K, B) table: each class's count (clipped at 0, rounded) redrawn multinomially from its
    clipped, normalised histogram, plus Gaussian noise of the public σ."""
    C = np.maximum(counts, 0.0)
    tot = C.sum(axis=1, keepdims=True)
    cond = np.where(tot > 0, C / np.where(tot > 0, tot, 1.0), 1.0 / C.shape[1])
    sizes = np.maximum(np.rint(tot[:, 0]), 1).astype(np.int64)
    out = np.stack([rng.multinomial(sizes[y], cond[y]) for y in range(C.shape[0])]).astype(np.float64)
    return out + (rng.normal(0.0, sigma, out.shape) if sigma > 0 else 0.0)


def temperature_shown(counts: np.ndarray, rows: tuple, log_prior: np.ndarray, sigma: float, a: float, *,
                      resamples: int = GUARD_RESAMPLES, level: float = GUARD_LEVEL, seed: int = RESAMPLE_SEED) -> bool:
    """Whether the release shows the model's temperature to be other than 1: the ``level`` percentile interval of log a
    over ``resamples`` refits on the released table with a second draw of Gaussian noise of the public σ added (stated
    as noise √2·σ: an interval at least as wide as the release's own) excludes 0. Where it does not — few source rows
    over many cells, whose errors' spread the noise hides — the model is kept as requested."""
    if sigma <= 0:
        return a != 1.0
    rng = np.random.default_rng(seed)
    draws = np.log([fit_temperature(counts + rng.normal(0.0, sigma, counts.shape), *rows, log_prior, math.sqrt(2.0) * sigma)
                    for _ in range(resamples)])
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(draws, tail), np.quantile(draws, 1.0 - tail)
    return bool(math.log(a) != 0.0 and not low <= 0.0 <= high)


def calibrate(score_request: ScoreRequest, counts: np.ndarray, Zt: np.ndarray, model_prior: np.ndarray, *,
              calibration: str | None = None, sigma: float = 0.0, guard: bool = True, start: float | None = None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
    """(W, b) of the calibrated scores on the mapped rows ``Zt`` (log-posteriors at the returned source prior, up to a
    constant), that prior and the stated quantities. ``"platt"``: binary, the logit mapped by Platt's fit to the noisy
    ``counts`` (K, B), at the prior those counts imply; K > 2, the log-likelihood part tempered by :func:`fit_temperature`
    (``sigma``: the release's public σ), at the model's own DP source prior ``model_prior``, when the release shows it
    (an interior optimum of :data:`INVERSE_TEMPERATURE_RANGE` and :func:`temperature_shown`; ``guard=False`` skips
    those checks); otherwise, and for ``"temperature"``, the model as
    requested (the first release's stated temperature), at ``model_prior``. ``start``: a warm start of the fit (one
    reweighting round from it; the resamples of :func:`estimate` start at the point estimate)."""
    calibration = CALIBRATION if calibration is None else calibration
    if calibration not in CALIBRATIONS:
        raise ValueError(f"calibration must be one of {CALIBRATIONS}, got {calibration!r}")
    W, b = score_request.W, score_request.b
    prior = np.asarray(model_prior, dtype=np.float64)
    if calibration == "temperature":
        return W, b, prior, {"calibration": "as requested (the stated temperature)"}
    if score_request.layout == "class-confidence":
        log_prior = np.log(prior)
        rows = _cell_rows(score_request, Zt @ W.T + b)
        a = fit_temperature(counts, *rows, log_prior, sigma) if start is None else \
            fit_temperature(counts, *rows, log_prior, sigma, rounds=1, start=start)
        lo, hi = INVERSE_TEMPERATURE_RANGE
        at_edge = not lo * 1.01 < a < hi / 1.01  # no interior optimum: the counts do not determine a
        if guard and (at_edge or not temperature_shown(counts, rows, log_prior, sigma, a)):
            return W, b, prior, {"calibration": "as requested: the released score histograms do not show another "
                                                "temperature", "fitted_temperature": 1.0 / a, "temperature_applied": False}
        return a * W, a * (b - log_prior) + log_prior, prior, {
            "calibration": "temperature fitted to the released score histograms", "fitted_temperature": 1.0 / a,
            "temperature_applied": True}
    s = Zt @ (W[1] - W[0]) + (b[1] - b[0])
    x = bin_scores(score_request, score_request.cells(s), s)
    a, c = platt(counts, x)
    W2 = np.vstack([np.zeros_like(W[0]), a * (W[1] - W[0])])
    b2 = np.array([0.0, a * (b[1] - b[0]) + c])
    t = np.maximum(np.maximum(counts, 0.0).sum(axis=1), 1.0)
    return W2, b2, t / t.sum(), {"calibration": "Platt on the released score histograms", "platt_slope": a,
                                 "platt_intercept": c}


def _point(method: str, C: np.ndarray, h: np.ndarray, P: np.ndarray, prior: np.ndarray, weights=None) -> np.ndarray:
    from dpadapt import prevalence as prev

    if method == "match":
        return match(C, h)
    if weights is not None:
        return prev._em_weighted(P, prior, weights[None])[0] if method == "em" else prev.normalised(weights @ P)
    return prev.point(P, prior, method)


def residual(H: Histograms, target_counts: np.ndarray, prior: np.ndarray) -> tuple[float, float]:
    """(r, d): r = ½ Σ_b |q_b − Σ_y π_y C_yb|, the total-variation residual of the receiver's score histogram q (its
    rows' shares per bin, from ``target_counts``) against the source's released per-class histograms C
    (:meth:`Histograms.class_conditionals`) mixed at ``prior``; d, the total-variation distance between the classes'
    histograms (K > 2: the smallest pairwise one). Under label shift r ≈ d·|π − π_t| (binary), so r / d is the change
    of prior the residual would need along the direction the classes separate; a shift beyond the prior leaves more."""
    C = H.class_conditionals()
    q = np.asarray(target_counts, dtype=np.float64)
    q = q / max(q.sum(), 1.0)
    r = 0.5 * float(np.abs(q - np.asarray(prior, dtype=np.float64) @ C).sum())
    K = C.shape[0]
    d = min(0.5 * float(np.abs(C[i] - C[j]).sum()) for i in range(K) for j in range(i + 1, K))
    return r, d


def gate(H: Histograms, target_counts: np.ndarray, *, resamples: int = GATE_RESAMPLES, seed: int = RESAMPLE_SEED
         ) -> tuple[float, float]:
    """(r, r₀): r, :func:`residual` of the receiver's score histogram at the best label-shift fit π̂ = :func:`match` (what
    no change of prior explains); r₀, r's expected value were label shift exact — the mean over ``resamples`` draws of a
    world in which the source's class histograms are the released ones (each class's counts redrawn multinomially and
    Gaussian noise of the public σ added, as :func:`resample_counts`) and the receiver's n rows a multinomial draw from
    them mixed at π̂, each refitted by :func:`match` — the share of r the release noise and the two samples put there.
    r − r₀ is the shift beyond the prior. Post-processing of the release and of the receiver's rows: no privacy cost."""
    C = H.class_conditionals()
    h = np.asarray(target_counts, dtype=np.float64)
    n = int(round(h.sum()))
    pi = match(C, h)
    q = pi @ C
    r = 0.5 * float(np.abs(h / max(h.sum(), 1.0) - q).sum())
    if n <= 0 or resamples <= 0:
        return r, 0.0
    rng = np.random.default_rng(seed)
    Cs = np.stack([H.class_conditionals(resample_counts(H.counts, H.sigma, rng)) for _ in range(resamples)])
    hs = rng.multinomial(n, q / q.sum(), size=resamples).astype(np.float64)
    fits = np.einsum("rk,rkb->rb", match(Cs, hs), Cs)
    return r, float(np.mean(0.5 * np.abs(hs / n - fits).sum(axis=1)))


def gated_choice(r: float, r0: float, threshold: float | None = None, arm: str | None = None) -> str:
    """The estimator ``"gated"`` uses: ``arm`` (default :data:`GATE_ARM`) where r − r₀ ≤ ``threshold`` (default
    :data:`GATE_THRESHOLD`; :func:`gate`), else ``"mean"``."""
    threshold = GATE_THRESHOLD if threshold is None else threshold
    return (GATE_ARM if arm is None else arm) if r - r0 <= threshold else "mean"


def _stated(score_request: ScoreRequest, H: Histograms, Zt: np.ndarray, target_bins: np.ndarray, model_prior,
            fitted: tuple, h: np.ndarray, *, calibration, method: str, level: float, n_boot: int, seed: int
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(estimate, low, high) of ``method`` with the ``resample`` interval: percentiles over ``n_boot`` resamples of the
    release (its public σ) and of the receiver's rows; ``fitted``: (W, b, prior, calibration details) of the point."""
    W, b, prior, cal = fitted
    B = H.counts.shape[1]

    def bbse(counts, hb):  # K > 2: BBSE on the confusion matrix, the table's marginal
        return match_ls(counts, hb) if score_request.layout == "logit" else \
            match_ls(score_request.confusion(counts), score_request.confusion(hb))

    est = bbse(H.counts, h) if method == "match-ls" else \
        _point(method, H.class_conditionals(), h, posteriors(W, b, Zt), prior)
    draws = []
    if n_boot > 0 and Zt.shape[0]:
        rng = np.random.default_rng(seed)
        n = Zt.shape[0]
        refit = calibration if cal.get("temperature_applied", True) else "temperature"  # K > 2: as the point estimate
        for _ in range(n_boot):
            counts = resample_counts(H.counts, H.sigma, rng)
            rows = np.bincount(rng.integers(0, n, n), minlength=n).astype(np.float64)
            hb = np.bincount(target_bins, weights=rows, minlength=B)
            if method == "match":  # solved for every resample at once below
                draws.append((H.class_conditionals(counts), hb))
            elif method == "match-ls":
                draws.append(bbse(counts, hb))
            else:
                Wb, bb, pb, _ = calibrate(score_request, counts, Zt, model_prior, calibration=refit, sigma=H.sigma,
                                          guard=False, start=1.0 / cal.get("fitted_temperature", 1.0))
                draws.append(_point(method, None, None, posteriors(Wb, bb, Zt), pb, rows / n))
        if method == "match":
            draws = list(match(np.stack([c for c, _ in draws]), np.stack([h for _, h in draws])))
    tail = (1.0 - level) / 2.0
    low, high = (np.quantile(draws, tail, axis=0), np.quantile(draws, 1 - tail, axis=0)) if draws else (est, est)
    return est, np.minimum(low, est), np.maximum(high, est)


#: What each interval (:data:`INTERVALS`) includes, for the line that prints it.
INCLUDES = {
    "resample": "resamples of the released counts with their public σ and of the receiver's rows",
    "hull": "the hull of the resample intervals of match, em and mean (their disagreement: a shift beyond the prior)",
    "residual": "resamples of the release and of the rows, widened by the mixture-fit residual of the receiver's scores "
                "against the released histograms (a shift beyond the prior), in units of prior",
    "residual-tv": "resamples of the release and of the rows, widened by the mixture-fit residual (total variation) of "
                   "the receiver's scores against the released histograms",
}


def estimate(score_request: ScoreRequest, H: Histograms, Zt: np.ndarray, target_bins: np.ndarray, model_prior, *,
             calibration: str | None = None, method: str | None = None, interval: str | None = None, level: float = 0.9,
             n_boot: int = 200, seed: int = RESAMPLE_SEED) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict, dict]:
    """(W, b, source prior, calibration details, prevalence) from the histograms and the receiver's mapped rows ``Zt``
    (``target_bins``: their bins). The prevalence (``method``: one of :data:`PREVALENCES`;
    ``"gated"``: :data:`GATE_ARM` or ``"mean"`` as :func:`gate` says, recorded under ``"gate"``) comes with a ``level``
    interval (``interval``, :data:`INTERVALS`; default :data:`INTERVAL`): ``resample`` is over ``n_boot`` resamples of
    the release (its public σ) and of the receiver's rows (module docstring); ``hull`` joins those of ``match``,
    ``em`` and ``mean``; ``residual`` / ``residual-tv`` widen it by :func:`residual`'s r / d or r. Every one is
    post-processing of the release and of the receiver's rows: no privacy cost."""
    if method is None:
        method = PREVALENCE if score_request.layout == "logit" else PREVALENCE_MULTICLASS
    interval = INTERVAL if interval is None else interval
    if method not in PREVALENCES:
        raise ValueError(f"method must be one of {PREVALENCES}, got {method!r}")
    if interval not in INTERVALS:
        raise ValueError(f"interval must be one of {INTERVALS}, got {interval!r}")
    W, b, prior, cal = calibrate(score_request, H.counts, Zt, model_prior, calibration=calibration, sigma=H.sigma)
    h = np.bincount(target_bins, minlength=H.counts.shape[1]).astype(np.float64)
    opts = {"calibration": calibration, "level": level, "n_boot": n_boot, "seed": seed}
    gated = {}
    if method == "gated":
        g, g0 = gate(H, h)
        method = gated_choice(g, g0)
        gated = {"gate": {"residual": g, "null": g0, "threshold": GATE_THRESHOLD, "arm": GATE_ARM, "chose": method}}
    est, low, high = _stated(score_request, H, Zt, target_bins, model_prior, (W, b, prior, cal), h, method=method, **opts)
    r, d = residual(H, h, est)
    if interval == "hull":
        for other in HULL:
            if other != method:
                e2, l2, h2 = _stated(score_request, H, Zt, target_bins, model_prior, (W, b, prior, cal), h,
                                     method=other, **opts)
                low, high = np.minimum(low, np.minimum(l2, e2)), np.maximum(high, np.maximum(h2, e2))
    elif interval.startswith("residual"):
        w = r if interval == "residual-tv" else (r / d if d > 0 else 1.0)
        low, high = np.clip(low - w, 0.0, 1.0), np.clip(high + w, 0.0, 1.0)
    return W, b, prior, cal, {"prior": est.tolist(), "low": low.tolist(), "high": high.tolist(), "level": level,
                              "method": f"{'gated: ' if gated else ''}{method} (score release)", "interval": interval,
                              "includes": INCLUDES[interval], "residual": r, "separation": d,
                              "source_prior": prior.tolist(), **gated}


def adapt(model: SoundModel, score_request: ScoreRequest, releases: list[Release], Xt, *, calibration: str | None = None,
          prevalence: str | None = None, interval: str | None = None, n_boot: int = 200) -> SoundModel:
    """(c) ``model`` calibrated by the sources' score histograms and predicting at the target's prior estimated from
    them (``details``: the calibration, ``source_prior``, ``target_prior`` and its interval ``prevalence``).

    The calibrated posteriors are moved to the estimate π̂ by Bayes' rule (p ∝ p_s·π̂/π_s) only where the estimator
    is not ``"mean"`` (``details["prior_shift"]``). The ``"mean"`` estimate — the gate's fallback — is the calibrated
    posteriors' own mean over the receiver's rows: they already are at π̂, and a shift would count the prior twice
    (their mean would move past it). EM's estimate is the fixed point where the shifted posteriors average to π̂, so
    its shift is consistent. Chosen by the rule "a consistent prior shift on the second release" of
    ``benchmarks/decisions/README.md``."""
    H = combine(score_request, releases)
    Zt = model.row_map()(Xt)
    W, b, prior, cal, prev = estimate(score_request, H, Zt, score_request.bins(Xt), model.details["source_prior"],
                                      calibration=calibration, method=prevalence, interval=interval, n_boot=n_boot)
    used = prev["gate"]["chose"] if "gate" in prev else prevalence  # None: the default, EM where not gated
    details = {**model.details, **cal, "score_histograms_sigma": H.sigma, "source_prior": prior.tolist(),
               "statistics_source_prior": model.details["source_prior"],
               "target_prior": prev["prior"], "prevalence": prev, "prior_shift": used != "mean",
               "target_scale": None}  # this release's own calibration replaces the first model's target scale
    return dataclasses.replace(model, W=W, b=b, details=details)
