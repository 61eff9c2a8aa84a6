"""The sound release on a Dask cluster: per-partition sums on the workers equal the in-memory ones.

Noise-free (ε = None) releases, so that the sums, counts and pooled second moment are compared exactly (to
1e-9 relative): a ``dask.array`` with labels, a ``dask.dataframe`` with a label column and a partitioned
Parquet directory, each through a 2-worker ``LocalCluster`` (processes); and the patient-level bound on
the cluster path (a group-by on the ID before clipping) against the same bound applied in memory.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

from dpadapt import sound  # noqa: E402
from dpadapt.privacy.mechanisms import random_streams  # noqa: E402
from dpadapt.sound.request import Request, SourceFacts  # noqa: E402

K, D, N = 3, 6, 2400


@pytest.fixture(scope="module")
def client():
    # No per-worker memory limit: a worker holding dpadapt, scikit-learn, pandas and pyarrow sits near 280 MB, and
    # past 80 % of a limit Dask pauses it, which leaves every task waiting for ever (the suite hung on CI at 400 MB).
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    y = rng.integers(0, K, N)
    X = rng.normal(size=(K, D))[y] + rng.normal(size=(N, D))
    X[5] *= 1e200  # a row whose squared norm overflows float64: normalised like any other, on a worker too
    return X, y


def _requests(X):
    Xt = X[:400] + 0.2
    basis = Request.from_release(sound.request(Xt, sound.Config(epsilon=1.0, classes=tuple(range(K))), N))
    facts = (SourceFacts(N, None, None),)  # the noise-free releases below; the designed request is for ε = 1
    moments = Request(classes=tuple(range(K)), n_features=D, log1p=False, statistics="moments", sources=facts)
    return {"designed": basis, "features+moments": moments}


def _release(req, X, y=None, **kw):
    config = sound.Config(epsilon=None, classes=tuple(range(K)))
    n = kw.pop("n", N)
    plan = sound.plan(config, {"request": req, "n_source": n})
    return sound.release(plan, req, X, y, **kw)


def _assert_same(a, b):
    assert set(a.arrays) == set(b.arrays)
    for name in a.arrays:
        np.testing.assert_allclose(a[name], b[name], rtol=1e-9, atol=1e-12 * max(1.0, float(np.abs(b[name]).max())))


@pytest.mark.parametrize("which", ["designed", "features+moments"])
def test_cluster_sums_equal_in_memory_for_array_frame_and_parquet(client, data, tmp_path, which):
    import dask.array as da
    import dask.dataframe as dd
    import pandas as pd

    X, y = data
    req = _requests(X)[which]
    here = _release(req, X, y)
    on_array = _release(req, da.from_array(X, chunks=(700, 3)), da.from_array(y, chunks=500), client=client)
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(D)]).assign(label=y)
    on_frame = _release(req, dd.from_pandas(frame, npartitions=4), label_column="label", client=client)
    (tmp_path / "pq").mkdir()
    for i, part in enumerate(np.array_split(np.arange(N), 3)):
        frame.iloc[part].to_parquet(tmp_path / "pq" / f"part-{i}.parquet")
    on_parquet = _release(req, tmp_path / "pq", label_column="label", client=client)
    for rel in (on_array, on_frame, on_parquet):
        _assert_same(rel, here)
    if which == "features+moments":
        assert "second" in here.arrays


def test_patient_level_bound_on_the_cluster_keeps_each_patients_first_rows(client, data):
    import dask.dataframe as dd
    import pandas as pd

    X, y = data
    ids = np.random.default_rng(1).integers(0, 500, N)  # ~4.8 rows a patient
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(D)]).assign(label=y, pid=ids)
    keep = frame.groupby("pid", sort=False).cumcount().to_numpy() < 2
    req = _requests(X)["features+moments"]
    here = _release(req, X[keep], y[keep], n=int(keep.sum()))
    there = _release(req, dd.from_pandas(frame, npartitions=5), label_column="label", id_column="pid", rows_per_id=2,
                     n=int(keep.sum()), client=client)
    _assert_same(there, here)
    with pytest.raises(ValueError, match="plan is for"):  # the plan counts the rows kept, not the rows read
        _release(req, dd.from_pandas(frame, npartitions=5), label_column="label", id_column="pid", rows_per_id=2,
                 client=client)


def test_the_private_cluster_release_draws_one_gaussian_in_the_caller(client, data):
    import dask.array as da

    X, y = data
    req = _requests(X)["designed"]
    config = sound.Config(epsilon=1.0, classes=tuple(range(K)))
    plan = sound.plan(config, {"request": req, "n_source": N})
    noise = random_streams(None)[1]
    rel = sound.release(plan, req, da.from_array(X, chunks=(600, D)), da.from_array(y, chunks=600), noise, client=client)
    exact = _release(req, X, y)
    assert rel.guarantee.epsilon == 1.0 and rel.params["sigma"] > 0
    assert not np.allclose(rel["sums"], exact["sums"])  # noised, once
    assert rel["sums"].shape == exact["sums"].shape


def _assert_same_design(there, here):
    """The discrete decisions equal; the basis the same subspace (its signs may differ), the spectrum the same."""
    for what in ("log1p", "statistics", "k", "n_features"):
        assert getattr(there, what) == getattr(here, what), what
    assert there.design["design"] == here.design["design"]
    np.testing.assert_allclose(there.design["cluster_ratio"], here.design["cluster_ratio"], rtol=1e-6)
    np.testing.assert_allclose(there.design["spectrum_head"], here.design["spectrum_head"], rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(there.mean, here.mean, atol=1e-12)
    projector = here.components @ here.components.T
    np.testing.assert_allclose(there.components @ there.components.T, projector, atol=1e-6)


def test_the_receivers_request_on_the_cluster_equals_the_in_memory_one(client, data, tmp_path):
    """The map detection, the gap statistic and the basis (Dask's randomized SVD) of the receiver's rows on a
    2-worker cluster: a dask.array of real-valued rows and a Parquet directory of counts (log1p detected)."""
    import dask.array as da
    import pandas as pd

    X, y = data
    config = sound.Config(epsilon=1.0, classes=tuple(range(K)))
    Xt = X[:900] + 0.2
    here = Request.from_release(sound.request(Xt, config, N))
    there = Request.from_release(sound.request(da.from_array(Xt, chunks=(250, 4)), config, N, client=client))
    _assert_same_design(there, here)
    counts = np.random.default_rng(2).poisson(np.exp(X[10:910] / 3))  # (row 5 is the overflow row)
    (tmp_path / "t").mkdir()
    frame = pd.DataFrame(counts, columns=[f"f{j}" for j in range(D)]).assign(y=y[:900])
    for i, part in enumerate(np.array_split(np.arange(900), 3)):
        frame.iloc[part].to_parquet(tmp_path / "t" / f"part-{i}.parquet")
    here = Request.from_release(sound.request(counts, config, N))
    there = Request.from_release(sound.request(tmp_path / "t", config, N, client=client, label_column="y"))
    assert here.log1p and there.log1p
    _assert_same_design(there, here)
    bad = Xt.copy()
    bad[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        sound.request(da.from_array(bad, chunks=(250, D)), config, N, client=client)


def test_cli_two_party_flow_with_a_local_cluster(client, tmp_path, data, monkeypatch, capsys):
    """The receiver's request of a Parquet directory on a running cluster (`--scheduler`), the source's release of a
    Parquet directory summed by `--workers 2`, the receiver's model; DPOT's release of a prototypes request (`release dpot
    --scheduler`) of the same directory; the ledger charges each release once, as for a file."""
    import pandas as pd

    from dpadapt.cli.main import main
    from dpadapt.privacy.ledger import Ledger

    X, y = data
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(D)]).assign(y=y)
    for i, part in enumerate(np.array_split(np.arange(N), 3)):
        frame.iloc[part].to_parquet(tmp_path / "src" / f"part-{i}.parquet")
    from dpadapt.io import save_table

    save_table(tmp_path / "t.npz", X[:400] + 0.2, y[:400])
    (tmp_path / "tq").mkdir()
    for i, part in enumerate(np.array_split(np.arange(400), 2)):
        (frame.iloc[part] + 0.2).to_parquet(tmp_path / "tq" / f"part-{i}.parquet")
    ledger = ["--ledger", str(tmp_path / "l.sqlite"), "--dataset-id", "s"]
    scheduler = ["--scheduler", client.scheduler.address]
    assert main(["budget", "set", "--party", "source", "--epsilon", "5", "--delta", "1e-3", *ledger]) == 0
    assert main(["request", "--data", "tq", "--classes", "0,1,2", "--n-source", str(N), "--epsilon", "1", "--delta",
                 "1e-5", "--declare-public", "--out", "q.release", *scheduler]) == 0
    assert "connected to the Dask cluster" in capsys.readouterr().err
    assert main(["release", "sound", "--classes", "0,1,2", "--data", "src", "--request", "q.release", "--epsilon", "1", "--delta", "1e-5",
                 "--out", "s.release", "--workers", "2", *ledger]) == 0
    assert "local Dask cluster of 2" in capsys.readouterr().err
    assert main(["adapt", "sound", "--release", "s.release", "--own-release", "q.release", "--data", "t.npz",
                 "--out", "m.dpadapt", "--score-request", "sr.release"]) == 0
    spent = Ledger(tmp_path / "l.sqlite").history("source", "s")
    assert len(spent) == 1
    from dpadapt.release import Release

    assert Release.load("s.release").params["n_source"] == N
    assert main(["request", "--data", "t.npz", "--classes", "0,1,2", "--n-source", str(N), "--epsilon", "1", "--delta",
                 "1e-5", "--design", "prototypes", "--out", "p.release"]) == 0
    assert main(["release", "dpot", "--n-classes", "3", "--data", "src", "--request", "p.release", "--epsilon", "1",
                 "--delta", "1e-5", "--out", "d.release", *scheduler, *ledger]) == 0
    assert len(Ledger(tmp_path / "l.sqlite").history("source", "s")) == 2
    assert Release.load("d.release")["sums"].shape == (K, Release.load("p.release").params["k"])
    assert main(["adapt", "dpot", "--release", "d.release", "--own-release", "p.release", "--data", "t.npz",
                 "--out", "d.dpadapt"]) == 0
    # the second, calibrating release answered on the cluster too, charged and composed by the same ledger
    assert main(["release", "sound", "--classes", "0,1,2", "--data", "src", "--request", "sr.release", "--epsilon", "0.5",
                 "--delta", "1e-5", "--out", "h.release", *scheduler, *ledger]) == 0
    assert Release.load("h.release").params["n_source"] == N and len(Ledger(tmp_path / "l.sqlite").history("source", "s")) == 3
    assert main(["adapt", "sound", "--release", "s.release", "--release", "h.release", "--own-release", "q.release",
                 "--own-release", "sr.release", "--data", "t.npz", "--out", "m2.dpadapt"]) == 0
    capsys.readouterr()
    assert main(["release", "sound", "--classes", "0,1,2", "--data", "t.npz", "--request", "q.release", "--epsilon", "1", "--delta", "1e-5",
                 "--out", "x.release", "--workers", "2", *ledger]) != 0  # one file is read here, chunk by chunk
    assert "Parquet dataset" in capsys.readouterr().err
    (tmp_path / "bad").mkdir()
    frame.assign(y=np.where(np.arange(N) == 7, 9, y)).to_parquet(tmp_path / "bad" / "part-0.parquet")
    assert main(["release", "dpot", "--n-classes", "3", "--data", "bad", "--request", "p.release", "--epsilon", "1",
                 "--delta", "1e-5", "--out", "e.release", *scheduler, *ledger]) != 0  # a label outside the set, on a worker
    states = [e.state for e in Ledger(tmp_path / "l.sqlite").history("source", "s")]
    assert states == ["committed", "committed", "committed", "aborted"]  # the refused release is refunded: no noise was drawn
