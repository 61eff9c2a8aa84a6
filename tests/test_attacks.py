"""Issue 27, "by construction": every attack runs against every route of every estimator and every CLI method.

The routes come from :func:`dpadapt.routes.routes` (each public estimator's private branches, the
:class:`~dpadapt.sound.SoundDA` designs derived from ``sound.design.DESIGNS``), the CLI methods from
:func:`dpadapt.cli.methods.methods`. Nothing here names a route: a registered route or method is attacked
as it is registered, and ``test_every_public_estimator_is_routed`` fails for a public estimator that is
neither routed nor declared non-private. The attacks (threat model: ``docs/threat-model.md``):

* a one-class source (the label set is public: a source holding one class is released like its neighbour);
* NaN / inf / overflowing rows from the other party: a one-line ``ValueError`` or a finite model, never a crash;
* the whole release file, D vs D′, under every neighbour relation the route states (:data:`RELATIONS`: replace-one —
  a record relabelled, zeroed, made huge in the dtype of the computation, duplicated; add/remove — a record removed
  or added) and whatever the other party's rows choose (map, basis, k, design): the same answer (release or
  refusal — "release or none" is itself an output), and files identical in every public field (params, shapes,
  counts, metadata, guarantee) — only the noisy values differ;
* reproducible-noise marking: fresh noise differs between two fits with one seed and the Guarantee is valid;
  ``reproducible_noise=True`` replays it and every Guarantee says so;
* Δ at the worst case: the first noise draw (:func:`dpadapt.privacy.mechanisms.observe_draws`) moves by at
  most the Δ its calibration states, and by exactly Δ on the route's declared worst-case pair;
* CLI methods: refusal parity of ``dpadapt release`` on a one-class source, and the ledger kill loop.

A dummy route and a dummy CLI method show a new registration is attacked without new test code, and
that a deliberately broken one is caught.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from dpadapt import routes as routes_module
from dpadapt.privacy.guarantee import REPRODUCIBLE_NOISE_REASON
from dpadapt.privacy.mechanisms import observe_draws
from dpadapt.routes import Route

ROUTES = routes_module.routes()
TESTS = Path(__file__).parent
SRC = TESTS.parent / "src"
SEED = 11


# --- running a route ------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Outcome:
    released: bool
    estimator: object = None
    error: str = ""


def run(route: Route, data: dict, **params) -> Outcome:
    """Fit the route on ``data``; a one-line ``ValueError``/``TypeError`` is a refusal, anything else a crash."""
    est = route.make(random_state=SEED, **params)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit_domains(data["Xs"], data["ys"], data["Xt"], *([data["yt"]] if "yt" in data and not route.labelled else []))
    except (ValueError, TypeError) as exc:
        return Outcome(False, None, f"{type(exc).__name__}: {exc}")
    return Outcome(True, est)


def outputs(est, data: dict) -> list[np.ndarray]:
    """What the fitted estimator shows the world: its predictions on the target and its released arrays."""
    out = []
    for method in ("predict_proba", "decision_function", "predict"):
        if hasattr(est, method):
            with contextlib.suppress(Exception), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out.append(np.asarray(getattr(est, method)(data["Xt"]), dtype=float))
    for name in ("release_", "model_release_"):
        rel = getattr(est, name, None)
        if rel is not None and hasattr(rel, "arrays"):
            out += [np.asarray(a, dtype=float) for a in rel.arrays.values() if np.asarray(a).dtype.kind in "fiu"]
    out += [np.asarray(v, dtype=float) for k, v in sorted(vars(est).items()) if isinstance(v, np.ndarray) and v.dtype.kind == "f"]
    return out


def _copy(data: dict) -> dict:
    return {k: (np.array(v, copy=True) if isinstance(v, np.ndarray) else v) for k, v in data.items()}


def _huge(route: Route, width: int) -> np.ndarray:
    """A finite row whose squared norm overflows the route's dtype (in its declared domain)."""
    if route.domain == "box":
        return np.ones(width)  # the box's corner: the largest row the declared schema allows
    return np.full(width, math.sqrt(float(np.finfo(route.dtype).max)) * 4.0)


def neighbours(route: Route, data: dict) -> dict[str, dict]:
    """Replace-one neighbours D′ of D in the declared domain: one record of a protected party changed."""
    out = {}
    for party in route.protected:
        X = "Xs" if party == "source" else "Xt"
        n, d = np.asarray(data[X]).shape
        for kind in ("zero row", "huge row", "duplicate"):
            other = _copy(data)
            if kind == "zero row":
                other[X][0] = 0.0
            elif kind == "huge row":
                other[X] = np.asarray(other[X], dtype=np.float64)
                other[X][0] = _huge(route, d)
            else:
                other[X][0] = other[X][1]
                if party == "source":
                    other["ys"][0] = other["ys"][1]
            out[f"{party}: {kind}"] = other
        if party == "source" and route.labelled:
            out["source: relabel"] = routes_module.relabel_first(data)[1]
    return out


@pytest.fixture(scope="module")
def baseline():
    """The example D of every route, fitted once (released, with its outcome)."""
    cache: dict[str, tuple[dict, Outcome]] = {}

    def get(name: str) -> tuple[dict, Outcome]:
        if name not in cache:
            route = ROUTES[name]
            data = route.data(SEED)
            cache[name] = (data, run(route, data))
        return cache[name]

    return get


# --- the registry covers every public estimator ---------------------------------------------------------------


def test_every_public_estimator_is_routed():
    routed = {r.estimator for r in ROUTES.values()} | set(routes_module.non_private())
    missing = sorted(name for name, cls in routes_module.public_estimators().items() if cls not in routed)
    assert not missing, f"public estimators with no registered route (dpadapt.routes) and not declared non-private: {missing}"


def test_every_route_example_takes_its_route(baseline):
    for name, route in ROUTES.items():
        data, out = baseline(name)
        assert out.released, f"{name}: its own example is refused: {out.error}"
        if route.taken is not None:
            assert route.taken(out.estimator), f"{name}: the example took another route"
        guarantees = out.estimator.guarantees_
        assert set(route.protected) <= set(guarantees), f"{name}: no Guarantee for {set(route.protected) - set(guarantees)}"
        assert all(g.valid for g in guarantees.values()), f"{name}: {[g.reasons for g in guarantees.values()]}"
        assert all(routes_module.THREAT_MODEL in g.report() for g in guarantees.values()), f"{name}: no threat model link"
    assert (TESTS.parent / routes_module.THREAT_MODEL).is_file()


def test_sound_routes_follow_the_designs():
    """Every design of the sound default is a route (derived from ``design.DESIGNS``, not listed), and its example
    takes it."""
    from dpadapt.sound.design import DESIGNS

    routed = {name.split("/")[1] for name in ROUTES if name.startswith("sound/")}
    assert set(DESIGNS) <= routed


# --- the attacks: each a function of a route, run by the parametrised tests below and on any registered route -----


def attack_one_class_source(route: Route, data: dict) -> None:
    """A labelled protected source: D (every record of class 0 but one) and D′ (that one relabelled) are both released."""
    if not ("source" in route.protected and route.labelled):
        return
    d = _copy(data)
    d["ys"] = np.zeros_like(d["ys"])
    d["ys"][0] = 1
    d_prime = {**d, "ys": np.zeros_like(d["ys"])}
    results = [run(route, x) for x in (d, d_prime)]
    assert [r.released for r in results] == [True, True], f"{route.name}: one-class source: {[r.error for r in results]}"


def attack_hostile_rows(route: Route, data: dict) -> None:
    """NaN / ±inf / overflowing rows of the other party: a one-line refusal, or nothing NaN in what is produced."""
    parties = [p for p in ("source", "target") if p not in route.protected] or list(route.protected)
    for party in parties:
        X = "Xs" if party == "source" else "Xt"
        for bad in (np.nan, np.inf, -np.inf, np.finfo(np.float64).max / 2):
            d = _copy(data)
            d[X] = np.asarray(d[X], dtype=np.float64)
            d[X][1] = bad
            out = run(route, d)
            if out.released:  # mapped into the domain, or not read (a source-only baseline ignores the target)
                assert all(np.all(np.isfinite(a)) for a in outputs(out.estimator, data)), f"{route.name}: {party} row {bad} gives NaN"
            else:
                assert "NaN" in out.error or "finite" in out.error or "overflow" in out.error, f"{route.name}: {party} row {bad}: {out.error}"


def release_files(est) -> dict:
    """Every public field of what a fitted estimator releases — each :class:`~dpadapt.release.Release` it holds (as an
    attribute, or in a list/dict attribute): method, kind, owner, params, guarantee, array dtypes and shapes — and its
    Guarantees. Only the noisy values (and the file's id and time) are left out: they are what the noise covers."""
    import json

    from dpadapt.release import Release

    out: dict = {"guarantees_": {p: g.to_dict() for p, g in sorted(getattr(est, "guarantees_", {}).items())}}
    for name, value in sorted(vars(est).items()):
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, (list, tuple)) else [("", value)]
        for key, rel in items:
            if isinstance(rel, Release):
                out[f"{name}[{key}]"] = public_fields(rel)
    return json.loads(json.dumps(out, sort_keys=True, default=str))  # NaN-safe, tuple = list: compared as the file is


def public_fields(rel) -> dict:
    """What a release file states beside its noisy values: method, kind, owner, params, guarantee, array dtypes and
    shapes (its random id and its time left out)."""
    from dpadapt.jsonutil import to_jsonable

    return {"method": rel.method, "kind": rel.kind, "owner": rel.owner, "params": to_jsonable(rel.params),
            "guarantee": rel.guarantee.to_dict(), "arrays": {k: (v.dtype.str, v.shape) for k, v in sorted(rel.arrays.items())}}


def _first_difference(a: dict, b: dict, path: str = "") -> str:
    """The first field where two :func:`release_files` differ ("" when none). A ``*release_id`` names another file by
    its random id (fresh per file, like the noise): not compared."""
    for key in sorted(set(a) | set(b), key=str):
        if str(key).endswith("release_id"):
            continue
        x, y = a.get(key, "<absent>"), b.get(key, "<absent>")
        if isinstance(x, dict) and isinstance(y, dict):
            found = _first_difference(x, y, f"{path}.{key}")
            if found:
                return found
        elif x != y:
            return f"{path}.{key}: {str(x)[:120]} vs {str(y)[:120]}"
    return ""


def _protected_add_remove_party(route: Route, data: dict) -> str | None:
    """The party whose records the route protects under add/remove (``"source"`` where the route offers a
    ``relation`` parameter), or ``None`` where it states no add/remove guarantee."""
    if "relation" in route.estimator().get_params():
        return "source"
    fitted = run(route, data).estimator
    parties = [p for p, g in fitted.guarantees_.items() if g.relation == "add_remove"] if fitted is not None else []
    return parties[0] if parties else None


def replace_one_pairs(route: Route, data: dict) -> dict[str, dict]:
    """Replace-one: one record of a protected party changed, in the declared domain (:func:`neighbours`)."""
    return neighbours(route, data)


def add_remove_pairs(route: Route, data: dict) -> dict[str, dict]:
    """Add/remove: record 0 of the protected party removed; a copy of record 1 added."""
    party = _protected_add_remove_party(route, data)
    X, y = ("Xs", "ys") if party == "source" else ("Xt", "yt")
    removed, added = _copy(data), _copy(data)
    removed[X] = removed[X][1:]
    added[X] = np.concatenate([added[X], added[X][1:2]])
    if y in data and (party == "source" or not route.labelled or y == "yt"):
        removed[y] = removed[y][1:]
        added[y] = np.concatenate([added[y], added[y][1:2]])
    return {f"{party}: record removed": removed, f"{party}: record added": added}


#: Every neighbour relation a route may state → the neighbours D′ of an example D under it. A relation added here is
#: compared on every route that states it (:func:`stated_relations`).
RELATIONS = {"replace_one": replace_one_pairs, "add_remove": add_remove_pairs}


def stated_relations(route: Route, data: dict) -> dict[str, dict]:
    """The relations the route states → the estimator parameters that select it: replace-one always; add/remove where
    the route offers a ``relation`` parameter or its Guarantee is add/remove; and any the route declares."""
    out: dict[str, dict] = {"replace_one": {}}
    party = _protected_add_remove_party(route, data)
    if party is not None:
        out["add_remove"] = {"relation": "add_remove", "delta": 1e-4} if "relation" in route.estimator().get_params() else {}
    for relation in route.relations:
        out.setdefault(relation, {})
    return out


def other_party_variants(route: Route, data: dict) -> dict[str, dict]:
    """The example as given, and with the other (unprotected) party's rows from another draw: the other party's data
    choose the map, the basis, k, the design — the comparison must hold whatever they choose."""
    out = {"as given": data}
    unprotected = [p for p in ("source", "target") if p not in route.protected]
    if unprotected:
        other = route.data(SEED + 1)
        keys = ("Xt", "yt") if unprotected[0] == "target" else ("Xs", "ys")
        out["another other party"] = {**data, **{k: other[k] for k in keys if k in other and k in data}}
    return out


def attack_release_file(route: Route, data: dict) -> None:
    """D vs D′, for every relation the route states and whatever the other party's data choose: the same answer
    (released or refused — "release or none" is itself an output), and when released, files identical in every
    public field (params, shapes, counts, metadata, guarantee): only the noisy values may differ."""
    for relation, params in stated_relations(route, data).items():
        for variant, base in other_party_variants(route, data).items():
            first = run(route, base, **params)
            if relation == "replace_one" and variant == "as given":
                assert first.released, f"{route.name}: its own example is refused: {first.error}"
            pairs = RELATIONS[relation](route, base)
            if variant != "as given":
                pairs = dict(list(pairs.items())[:2])
            for kind, other in pairs.items():
                second = run(route, other, **params)
                where = f"{route.name} ({relation}, {variant}, {kind})"
                assert first.released == second.released, \
                    f"{where}: D is {'released' if first.released else 'refused'}, D′ is not: {first.error or second.error}"
                if first.released:
                    diff = _first_difference(release_files(first.estimator), release_files(second.estimator))
                    assert not diff, f"{where}: the release files differ beyond the noise: {diff}"
                    assert all(g.valid for g in second.estimator.guarantees_.values())


def attack_noise_marking(route: Route, data: dict) -> None:
    """Fresh noise is not replayed by the seed and the Guarantee is valid; reproducible noise is replayed and marked."""
    first, second = run(route, data), run(route, data)
    assert all(g.valid for g in first.estimator.guarantees_.values()), f"{route.name}: a fresh-noise Guarantee is invalid"
    assert any(not np.array_equal(a, b) for a, b in zip(outputs(first.estimator, data), outputs(second.estimator, data))), \
        f"{route.name}: two fits with random_state={SEED} are identical: the noise is replayable from the seed"
    repro = [run(route, data, reproducible_noise=True) for _ in range(2)]
    assert all(r.released for r in repro)
    for r in repro:
        for g in r.estimator.guarantees_.values():
            assert not g.valid and REPRODUCIBLE_NOISE_REASON in g.reasons, f"{route.name}: {g.report()}"
    one, two = (outputs(r.estimator, data) for r in repro)
    assert all(np.array_equal(a, b) for a, b in zip(one, two)), f"{route.name}: reproducible_noise=True does not replay the noise"


def first_draw(route: Route, data: dict):
    draws = []
    with observe_draws(draws.append):
        out = run(route, data, reproducible_noise=True)
    assert out.released, out.error
    return draws[0] if draws else None


def _distance(a, b) -> float:
    diff = a.value - b.value
    return float({"l2": np.linalg.norm(diff), "l1": np.sum(np.abs(diff)), "linf": np.max(np.abs(diff), initial=0.0)}[a.norm])


def attack_sensitivity(route: Route, data: dict) -> None:
    """The first noise draw moves by at most its stated Δ for every neighbour, and by exactly Δ on the worst-case pair."""
    base = first_draw(route, data)
    if base is None or base.sensitivity is None:
        assert route.unobserved, f"{route.name}: its first noise draw states no sensitivity and the route does not say why"
        return
    for kind, d in neighbours(route, data).items():
        other = first_draw(route, d)
        assert other.kind == base.kind and other.value.shape == base.value.shape, f"{route.name}: {kind} changed the draw's shape"
        moved = _distance(base, other)
        assert moved <= base.sensitivity * (1 + 1e-9) + 1e-12, \
            f"{route.name}: {kind} moves the draw by {moved:.6g} > its stated Δ = {base.sensitivity:.6g}"
    if route.worst_pair is not None:
        a, b = (first_draw(route, d) for d in route.worst_pair(data))
        assert _distance(a, b) == pytest.approx(a.sensitivity, rel=1e-9), f"{route.name}: the worst-case pair does not attain Δ"


#: Every attack on a route (a new attack added here runs on every route).
ATTACKS = {"one_class": attack_one_class_source, "hostile_rows": attack_hostile_rows, "release_file": attack_release_file,
           "noise_marking": attack_noise_marking, "sensitivity": attack_sensitivity}


def _attack_cases() -> list:
    """(route, attack) pairs; an attack a route declares a known gap for must fail (strict xfail, with the reason)."""
    return [pytest.param(name, attack, id=f"{name}-{attack}",
                         marks=[pytest.mark.xfail(strict=True, raises=AssertionError, reason=route.known_gaps[attack])]
                         if attack in route.known_gaps else [])
            for name, route in sorted(ROUTES.items()) for attack in sorted(ATTACKS)]


@pytest.mark.parametrize("name, attack", _attack_cases())
def test_attack(name, attack, baseline):
    data, _ = baseline(name)
    ATTACKS[attack](ROUTES[name], data)


# --- a dummy route: registered, it is attacked; broken, it is caught ---------------------------------------------


def _dummy_routes(**defects):
    from dummy_estimator import DummyMeans

    return Route("dummy/means", DummyMeans, {"epsilon": 1.0, "delta": 1e-5, "classes": routes_module.CLASSES, **defects},
                 routes_module.blobs, ("source",), worst_pair=routes_module.relabel_first)


def test_a_registered_dummy_route_is_attacked_and_passes(monkeypatch):
    monkeypatch.setattr(routes_module, "_ROUTES", dict(routes_module.routes()))
    routes_module.register_route(_dummy_routes())
    route = routes_module.routes()["dummy/means"]  # the suite reads the registry: the dummy is in it
    for attack in ATTACKS.values():
        attack(route, route.data(SEED))


@pytest.mark.parametrize("defect, attack", [
    ("one_class_refused", "one_class"), ("nan_passes", "hostile_rows"), ("refuses_zero_rows", "release_file"),
    ("noise_from_seed", "noise_marking"), ("understated_sensitivity", "sensitivity"), ("n_in_release", "release_file"),
])
def test_a_broken_dummy_route_is_caught(defect, attack, monkeypatch):
    monkeypatch.setattr(routes_module, "_ROUTES", dict(routes_module.routes()))
    route = routes_module.register_route(_dummy_routes(**{defect: True}))
    with pytest.raises(AssertionError):
        ATTACKS[attack](route, route.data(SEED))


def test_a_toy_route_that_leaks_its_row_count_in_params_is_caught(monkeypatch):
    """A route whose release states n in its params (the dummy's ``n_in_release``): registered, the release-file
    comparison catches it under the add/remove relation the route states — with no test code for that route."""
    monkeypatch.setattr(routes_module, "_ROUTES", dict(routes_module.routes()))
    route = routes_module.register_route(dataclasses.replace(_dummy_routes(n_in_release=True), name="toy/leaky-n"))
    assert "add_remove" in stated_relations(route, route.data(SEED))
    with pytest.raises(AssertionError, match=r"add_remove.*release files differ beyond the noise: .*params\.n"):
        attack_release_file(routes_module.routes()["toy/leaky-n"], route.data(SEED))
    attack_release_file(_dummy_routes(), route.data(SEED))  # without the leak: the same comparison passes


# --- CLI methods: refusal parity of `dpadapt release` and the ledger kill loop -----------------------------------


def _cli_methods() -> list[str]:
    from dpadapt.cli.methods import methods

    return sorted(methods())


@pytest.fixture(scope="module")
def cli_files(tmp_path_factory):
    """A labelled source (D), its neighbour D′ with record 0 relabelled so that one class is left, an unlabelled target."""
    from dpadapt.datasets.synthetic import make_shifted_blobs
    from dpadapt.io import save_table

    d = tmp_path_factory.mktemp("cli")
    Xs, _, Xt, _ = make_shifted_blobs(np.random.default_rng(3), n_source=300, n_target=200)
    ys = np.zeros(len(Xs), dtype=np.int64)
    ys[0] = 1
    save_table(d / "d.npz", Xs, ys)
    ys[0] = 0
    save_table(d / "d_prime.npz", Xs, ys)
    save_table(d / "target.npz", Xt)
    return d


def _release_args(name: str, folder: Path, source: str) -> list[str]:
    from dpadapt.cli.methods import methods

    files = {"source": folder / source, "target": folder / "target.npz"}
    example = methods()[name].example_release_args
    return [str(a) for a in example(files)] if example else ["--data", str(files["source"])]


def _budget_all(folder: Path, ledger: Path) -> None:
    from dpadapt.privacy.ledger import Ledger, fingerprint

    for f in folder.glob("*.npz"):
        for party in ("source", "target"):
            Ledger(ledger).set_budget(party, fingerprint(f), 1e4, 1e-3)


def attack_cli_one_class(name: str, folder: Path) -> None:
    """`dpadapt release NAME` on D and on its one-class neighbour D′: the same answer (both written) and release files
    identical in every public field. A release of data declared public (``--declare-public``, DPDA's public source)
    protects no record: nothing to compare."""
    import json

    from dpadapt.cli.main import main
    from dpadapt.release import Release

    if "--declare-public" in _release_args(name, folder, "d.npz"):
        return
    codes = []
    for source in ("d.npz", "d_prime.npz"):
        out = folder / f"{name}-{source}.release"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            codes.append(main(["release", name, *_release_args(name, folder, source), "--epsilon", "4", "--delta", "1e-5",
                               "--out", str(out), "--seed", "0", "--force"]))
    assert codes == [0, 0], f"{name}: `dpadapt release` exits {codes} on D and its one-class neighbour D′"
    files = [json.loads(json.dumps(public_fields(Release.load(folder / f"{name}-{source}.release")), sort_keys=True,
                                   default=str)) for source in ("d.npz", "d_prime.npz")]
    diff = _first_difference(*files)
    assert not diff, f"{name}: the release files of D and its one-class neighbour D′ differ beyond the noise: {diff}"


@pytest.mark.parametrize("name", _cli_methods())
def test_cli_release_of_a_one_class_source_is_like_its_neighbour(name, cli_files, monkeypatch):
    monkeypatch.setenv("DPADAPT_LEDGER", str(cli_files / "ledger.sqlite"))
    _budget_all(cli_files, cli_files / "ledger.sqlite")
    attack_cli_one_class(name, cli_files)


def attack_cli_kill(name: str, folder: Path, env: dict) -> list[str]:
    """Two kills of `dpadapt release NAME`, run side by side (each with its own ledger): one at the moment a complete
    temporary release exists (``tmp_written``), one by SIGKILL at a random moment after its reservation. No usable
    release may be left with a refunded spend (a release declared public carries no spend to check)."""
    from ledger_kill_loop import _reserved, _usable_releases

    from dpadapt.privacy.ledger import Ledger
    from dpadapt.release import Release

    rng = np.random.default_rng(27)
    runs = {}
    for how in ("tmp_written", "random"):
        ledger = folder / f"kill-{name}-{how}.sqlite"
        _budget_all(folder, ledger)
        out = f"{name}-kill-{how}.release"
        cmd = [sys.executable, "-m", "dpadapt.cli.main", "release", name, *_release_args(name, folder, "d.npz"),
               "--epsilon", "4", "--delta", "1e-5", "--out", str(folder / out), "--seed", "0"]
        extra = {"DPADAPT_LEDGER": str(ledger), **({"DPADAPT_TEST_CRASH_AT": "tmp_written"} if how == "tmp_written" else {})}
        runs[how] = (subprocess.Popen(cmd, env={**env, **extra}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), ledger, out)
    proc, ledger, _ = runs["random"]
    start = time.monotonic()
    while proc.poll() is None and not _reserved(ledger) and time.monotonic() - start < 300:
        time.sleep(0.002)
    time.sleep(rng.uniform(0.0, 0.3))
    proc.send_signal(signal.SIGKILL)
    violations = []
    for how, (proc, ledger, out) in runs.items():
        proc.wait(timeout=300)
        usable = _usable_releases(folder, out)  # before the ledger settles (and removes a dead run's temporary file)
        private = {rid: math.isfinite(Release.load(folder / file).guarantee.epsilon) for rid, file in usable.items()}
        states = {e.release_id: e.state for e in Ledger(ledger).history()}
        for rid, file in usable.items():
            if private[rid] and states.get(rid) != "committed":
                violations.append(f"{how}: {file} is usable but its spend is {states.get(rid)}")
    return violations


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
@pytest.mark.parametrize("name", _cli_methods())
def test_cli_kill_loop_never_refunds_a_usable_release(name, cli_files):
    import os

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), str(TESTS), str(TESTS.parent / "benchmarks" / "ledger")]),
               DPADAPT_PLUGINS="_hooks_plugin")
    sys.path.insert(0, str(TESTS.parent / "benchmarks" / "ledger"))
    try:
        assert attack_cli_kill(name, cli_files, env) == []
    finally:
        sys.path.remove(str(TESTS.parent / "benchmarks" / "ledger"))


def test_a_registered_dummy_cli_method_is_attacked_and_a_broken_one_caught(cli_files, monkeypatch):
    """A CLI method registered like any plugin is in the list the CLI attacks read; a dummy that refuses a one-class
    source is caught by the same attack function."""
    from dpadapt.cli import methods as methods_module

    monkeypatch.setattr(methods_module, "_METHODS", dict(methods_module.methods()))
    monkeypatch.setenv("DPADAPT_LEDGER", str(cli_files / "dummy-ledger.sqlite"))
    _budget_all(cli_files, cli_files / "dummy-ledger.sqlite")
    import dummy_estimator

    dummy_estimator.register_cli("dummy-means")
    dummy_estimator.register_cli("dummy-means-broken", one_class_refused=True)
    assert {"dummy-means", "dummy-means-broken"} <= set(_cli_methods())
    attack_cli_one_class("dummy-means", cli_files)
    with pytest.raises(AssertionError, match="one-class"):
        attack_cli_one_class("dummy-means-broken", cli_files)
