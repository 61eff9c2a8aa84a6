"""`dpadapt slices` → `release dpswd-marginals` → `adapt dpswd-marginals` → `predict`/`score`: the sound
DP-SWD design as three party steps (each a separate `main` call on files only), and its refusals."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from dpadapt.cli.main import main
from dpadapt.datasets.synthetic import make_shifted_blobs
from dpadapt.io import load_table, save_table
from dpadapt.privacy.ledger import Ledger, fingerprint
from dpadapt.release import Release, ReleaseError

K, BINS, SLICES_SEED, ADAPT_SEED, ADAPT_STEPS = 30, 16, 0, 1, 150
SLICES = ["--network", "mlp", "--epochs", "1", "--min-steps", "100", "--k", str(K), "--bins", str(BINS)]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The parties' files (2-class shifted blobs) and the source's public map, made once."""
    d = tmp_path_factory.mktemp("swdcli")
    Xs, ys, Xt, yt = make_shifted_blobs(np.random.default_rng(0), n_source=300, n_target=400, n_classes=2)
    save_table(d / "source.npz", Xs, ys)
    save_table(d / "target.npz", Xt[:200])
    save_table(d / "target_test.npz", Xt[200:], yt[200:])
    save_table(d / "narrow.npz", Xt[:200, :5])
    assert main(["slices", "--data", str(d / "source.npz"), *SLICES, "--seed", str(SLICES_SEED), "--out", str(d / "map.release")]) == 0
    return d


@pytest.fixture
def ledger(world, tmp_path, monkeypatch):
    path = tmp_path / "ledger.sqlite"
    monkeypatch.setenv("DPADAPT_LEDGER", str(path))
    Ledger(path).set_budget("target", fingerprint(world / "target.npz"), 20.0, 1e-5)
    return Ledger(path)


def _release(world, out: Path, *extra: str, map_: Path | None = None, epsilon: str = "10") -> int:
    return main(["release", "dpswd-marginals", "--map", str(map_ or world / "map.release"), "--data", str(world / "target.npz"),
                 "--epsilon", epsilon, "--delta", "1e-5", "--out", str(out), "--seed", "5", *extra])


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err and "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


def test_the_map_is_a_disclosure_charged_to_no_budget(world, ledger):
    rel = Release.load(world / "map.release")
    assert (rel.method, rel.kind, rel.owner) == ("dpswd", "public_map", "source")
    assert math.isinf(rel.guarantee.epsilon) and not rel.guarantee.valid
    assert "public in DP-SWD" in rel.guarantee.reasons[0]
    assert rel["directions"].shape[1] == K and rel["edges"].size == BINS + 1
    assert ledger.history() == []


def test_three_steps_roundtrip_match_the_library_and_score(world, ledger, tmp_path, capsys):
    from dpadapt.classstats import label_indices
    from dpadapt.cli.party_cmd import load_model
    from dpadapt.deep import swd_marginals as sm
    from dpadapt.deep import swd_publicmap as pm
    from dpadapt.privacy.mechanisms import random_streams

    hist, model = tmp_path / "hist.release", tmp_path / "model.dpadapt"
    assert _release(world, hist) == 0
    rel = Release.load(hist)
    g = rel.guarantee
    assert (rel.method, rel.kind, rel.owner) == ("dpswd", "sliced_marginals", "target")
    assert g.valid and g.epsilon == pytest.approx(10.0) and g.delta == pytest.approx(1e-5)
    assert g.sensitivity == pytest.approx(math.sqrt(2 * K)) and g.details["releases"] == 1
    assert rel["counts"].shape == (K, BINS)
    spent = ledger.spent("target", fingerprint(world / "target.npz"))
    assert spent.n_releases == 1 and spent.epsilon == pytest.approx(10.0)
    # the source adapts; its map may come as --release or --own-release
    assert main(["adapt", "dpswd-marginals", "--release", str(hist), "--release", str(world / "map.release"),
                 "--data", str(world / "source.npz"), "--out", str(model), "--adapt-steps", str(ADAPT_STEPS),
                 "--seed", str(ADAPT_SEED)]) == 0
    assert ledger.spent("target", fingerprint(world / "target.npz")).n_releases == 1  # adapting costs nothing
    loaded = load_model(model)
    assert loaded["guarantees"]["target"].to_dict() == g.to_dict()
    # the same steps in one process, from the same public seeds and the released histogram
    src = load_table(world / "source.npz")
    classes = np.unique(src.y)
    rng, _ = random_streams(SLICES_SEED)
    steps = pm.steps_for(src.X.shape[0], 128, 1, 100)
    mine = pm.source_public_map(src.X, label_indices(src.y, tuple(classes)), classes, network="mlp", steps=steps,
                                batch_size=128, lr=5e-4, k=K, bins=BINS, rng=rng)
    assert mine.slices.digest() == Release.load(world / "map.release").params["map_digest"]
    adapted = sm.adapt_marginals(rel, mine.slices, src.X, label_indices(src.y, tuple(classes)), mine.h,
                                 sm.AdaptConfig(steps=ADAPT_STEPS, weight=1.0, form="affine"), random_streams(ADAPT_SEED)[0])
    test = load_table(world / "target_test.npz")
    expected = mine.classifier(adapted.h)
    np.testing.assert_allclose(loaded["model"].decision_function(test.X), expected.decision_function(test.X), atol=1e-5)
    assert np.array_equal(loaded["model"].predict(test.X), expected.predict(test.X))
    capsys.readouterr()
    assert main(["predict", "--model", str(model), "--data", str(world / "target.npz")]) == 0
    assert len(capsys.readouterr().out.split()) == 200
    assert main(["score", "--model", str(model), "--data", str(world / "target_test.npz")]) == 0
    accuracy = float(re.search(r"(?m)^accuracy\s+(\d\.\d+)", capsys.readouterr().out).group(1))
    source_only = float(np.mean(mine.classifier().predict(test.X) == test.y))
    assert accuracy > 0.75 and accuracy >= source_only - 0.05, (accuracy, source_only)


def _edited_map(world, tmp_path, name: str, edit) -> Path:
    rel = Release.load(world / "map.release")
    edit(rel)
    out = tmp_path / name
    rel.save(out)  # a well-formed file (its container digest recomputed): only the map's own checks can refuse it
    return out


@pytest.mark.parametrize("case, words", [
    ("digest", "digest"),
    ("shape", "shape"),
    ("parameter", "parameter"),
    ("architecture", "architecture"),
    ("width", "features"),
    ("kind", "public_map"),
])
def test_a_bad_map_or_data_is_refused_before_anything_is_written(world, ledger, tmp_path, capsys, case, words):
    edits = {
        "digest": lambda r: r.params.update(map_digest="0" * 64),
        "shape": lambda r: r.arrays.update(directions=r["directions"][:, :-1]),
        "parameter": lambda r: r.arrays.update({next(k for k in r.arrays if k.startswith("g.")): np.zeros((3, 3), np.float32)}),
        "architecture": lambda r: r.params.update(architecture="resnet-152"),
    }
    out = tmp_path / "hist.release"
    if case in edits:
        code = _release(world, out, map_=_edited_map(world, tmp_path, f"{case}.map", edits[case]))
    elif case == "width":
        code = main(["release", "dpswd-marginals", "--map", str(world / "map.release"), "--data", str(world / "narrow.npz"),
                     "--epsilon", "10", "--delta", "1e-5", "--out", str(out)])
    else:  # a sliced-marginals release is not a map
        hist = tmp_path / "first.release"
        assert _release(world, hist) == 0
        capsys.readouterr()
        code = _release(world, out, map_=hist)
    assert code == 1
    assert words in _one_line_error(capsys)
    assert not out.exists()
    assert ledger.spent("target", fingerprint(world / "target.npz")).n_releases == (1 if case == "kind" else 0)


@pytest.mark.parametrize("epsilon", ["0", "-1", "nan"])
def test_a_non_positive_epsilon_is_a_one_line_error(world, ledger, tmp_path, capsys, epsilon):
    out = tmp_path / "hist.release"
    assert _release(world, out, epsilon=epsilon) == 1
    _one_line_error(capsys)
    assert not out.exists() and ledger.history() == []


def test_adapt_refuses_foreign_releases(world, ledger, tmp_path, capsys):
    from dpadapt.cli.methods.dpswd_marginals import adapt
    from dpadapt.deep.swd_publicmap import load_map

    hist = tmp_path / "hist.release"
    assert _release(world, hist) == 0
    rel, map_ = Release.load(hist), Release.load(world / "map.release")
    # another method's release: refused by the driver (one line) and by the method
    other = Release("dpot", "class_statistics", "source", {"x": np.zeros(2)}, map_.guarantee)
    other.save(tmp_path / "other.release")
    capsys.readouterr()
    out = tmp_path / "model.dpadapt"
    assert main(["adapt", "dpswd-marginals", "--release", str(tmp_path / "other.release"), "--own-release",
                 str(world / "map.release"), "--data", str(world / "source.npz"), "--out", str(out)]) == 1
    assert "dpot" in _one_line_error(capsys) and not out.exists()
    with pytest.raises(ReleaseError):
        Release.load(tmp_path / "other.release", expect_method="dpswd")
    table = load_table(world / "source.npz")
    args = type("Args", (), {"adapt_steps": 1, "map_form": "affine", "marginal_weight": 1.0, "seed": 0, "label_column": "y"})()
    with pytest.raises(ReleaseError):  # the histogram is missing
        adapt(args, table, [map_])
    # a histogram released under another map (same shapes, other directions) is refused
    other_map = _edited_map(world, tmp_path, "other.map", lambda r: _redirect(r))
    with pytest.raises(ReleaseError, match="another feature map"):
        adapt(args, table, [rel, Release.load(other_map)])
    assert load_map(Release.load(other_map)).slices.digest() != rel.params["map_digest"]


def _redirect(release: Release) -> None:
    """Twice the directions, with a digest that matches them (a genuine other map)."""
    from dpadapt.deep.swd_publicmap import load_map

    slices = load_map(release).slices
    release.arrays["directions"] = 2 * release["directions"]
    release.params["map_digest"] = type(slices)(slices.g, slices.center, 2 * slices.directions, slices.edges).digest()


def test_readme_dpswd_block_runs_as_written(tmp_path, monkeypatch, capsys):
    """docs/two-party.md's DP-SWD block, in order, on the files `dpadapt demo` writes (seed 0)."""
    import shlex

    readme = (Path(__file__).resolve().parents[1] / "docs" / "two-party.md").read_text(encoding="utf-8")
    block = next(b for b in re.findall(r"```bash\n(.*?)```", readme, flags=re.S) if "release dpswd-marginals" in b)
    lines = [shlex.split(line, comments=True) for line in block.replace("\\\n", " ").splitlines()]
    monkeypatch.chdir(tmp_path)
    Xs, ys, Xt, yt = make_shifted_blobs(np.random.default_rng(0))
    half = Xt.shape[0] // 2
    for folder in ("demo/source", "demo/target", "exchange"):
        (tmp_path / folder).mkdir(parents=True)
    save_table(tmp_path / "demo/source/source.npz", Xs, ys)
    save_table(tmp_path / "demo/target/target.npz", Xt[:half])
    save_table(tmp_path / "demo/target/target_test.npz", Xt[half:], yt[half:])
    for line in filter(None, lines):
        if line[0] == "export":
            name, value = line[1].split("=", 1)
            monkeypatch.setenv(name, value.replace("$PWD", str(tmp_path)))
            continue
        assert line[0] == "dpadapt", line
        assert main(line[1:]) == 0, " ".join(line)
    accuracy = float(re.search(r"(?m)^accuracy\s+(\d\.\d+)", capsys.readouterr().out).group(1))
    assert accuracy > 0.8  # README: "about 0.92"; the source-only network 0.70


def test_the_target_can_require_a_map_signed_by_the_source(world, ledger, tmp_path, capsys):
    from dpadapt import keys

    secret, public = keys.new_keypair(tmp_path / "keys")
    signed = tmp_path / "signed.map"
    Release.load(world / "map.release").save(signed, sign_key=keys.load_private_key(secret))
    out = tmp_path / "hist.release"
    assert _release(world, out, "--trust", str(public)) == 1  # the unsigned map
    assert "sign" in _one_line_error(capsys) and not out.exists()
    assert _release(world, out, "--trust", str(public), map_=signed) == 0


def test_digits_network_map_and_its_refusals(tmp_path, capsys):
    from dpadapt.deep.swd_publicmap import load_map

    rng = np.random.default_rng(1)
    y = np.repeat([0, 1], 20)
    X = (np.where(y[:, None] == 0, 0.2, 0.8) + rng.uniform(-0.1, 0.1, size=(40, 784))).astype(np.float32)
    save_table(tmp_path / "digits.npz", X, y)
    save_table(tmp_path / "blobs.npz", rng.normal(size=(40, 20)), y)
    args = ["--network", "digits", "--epochs", "1", "--min-steps", "2", "--batch-size", "20", "--k", "8", "--bins", "4"]
    assert main(["slices", "--data", str(tmp_path / "digits.npz"), *args, "--out", str(tmp_path / "digits.map")]) == 0
    public_map = load_map(Release.load(tmp_path / "digits.map"), 784)
    assert public_map.slices.features(X[:3]).shape == (3, 320) and public_map.classifier().predict(X[:3]).shape == (3,)
    capsys.readouterr()
    assert main(["slices", "--data", str(tmp_path / "blobs.npz"), *args, "--out", str(tmp_path / "blobs.map")]) == 1
    assert "28×28" in _one_line_error(capsys) and not (tmp_path / "blobs.map").exists()
