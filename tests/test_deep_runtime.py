"""Where the deep loops run (dpadapt.deep.runtime): the device choice, device-safe noise, the BLAS pool."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dpadapt.deep import runtime
from dpadapt.deep.dann import DANN
from dpadapt.deep.swd_da import DPSWDAdapter
from dpadapt.privacy.mechanisms import NoiseSource, torch_gaussian_noise


def test_auto_device_follows_cuda_availability(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert runtime.training_device("auto") == torch.device("cpu")
    with pytest.raises(ValueError, match="no CUDA device"):
        runtime.training_device("cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert runtime.training_device("auto").type == "cuda"
    assert runtime.training_device("cpu") == torch.device("cpu")


@pytest.mark.parametrize("estimator", [DANN, DPSWDAdapter])
def test_device_is_checked_when_configured(estimator):
    with pytest.raises(ValueError, match="device: must be 'auto' or a torch device"):
        estimator(device="gpu0").make_config()
    assert estimator(device="cuda:1").make_config().device == "cuda:1"


def test_noise_is_drawn_on_the_cpu_and_lands_on_the_tensor_device():
    """The secret stream is a CPU generator; the noisy tensor stays where the gradient lives ("meta"
    stands in for a GPU: a CPU draw added to it without the move raises)."""
    total = torch.zeros(3, 2, device="meta")
    out = torch_gaussian_noise(total, 1.0, NoiseSource().torch_generator())
    assert out.device.type == "meta" and out.shape == (3, 2)


def test_networks_come_back_to_the_cpu(rng):
    Xs, Xt = rng.normal(size=(40, 5)), rng.normal(size=(40, 5)) + 1
    ys = np.arange(40) % 2
    model = DPSWDAdapter(epsilon=None, device="cpu", epochs=1, min_steps=3, batch_size=8, random_state=0).fit_domains(Xs, ys, Xt)
    assert {p.device.type for p in model.train_result_.g.parameters()} == {"cpu"}
    assert model.predict(Xt).shape == (40,)


def test_training_loops_size_blas_like_torch(monkeypatch):
    """The per-step loops run numpy BLAS between torch steps; its pool must not outnumber torch's."""
    from threadpoolctl import threadpool_info

    if not [p for p in threadpool_info() if p["user_api"] == "blas"]:
        pytest.skip("numpy links no BLAS that threadpoolctl can see")
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    with runtime.blas_like_torch():
        assert {p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"} == {1}
