"""The deep methods' CUDA path (issue 40): DPDA, G-DPDA and DP-SWD trained with ``device="cuda"``.

Runs only where torch sees a CUDA device and skips cleanly elsewhere (nothing in the library needs
a GPU). Each test trains a tiny model on the GPU and checks what must not depend on the device: the
networks come back to the CPU, the predictions are valid labels, and the privacy plan (σ, steps, ε)
is the one the same configuration gets on the CPU.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dpadapt.deep.dpda import DPDA, GDPDA
from dpadapt.deep.swd_da import DPSWDAdapter

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA device")


def _toy(rng, n=64, d=6):
    Xs = rng.normal(size=(n, d))
    ys = (Xs[:, 0] > 0).astype(int)
    return Xs, ys, rng.normal(size=(n, d)) + 1.0


def _devices(module: torch.nn.Module) -> set[str]:
    return {p.device.type for p in module.parameters()}


@pytest.mark.parametrize("estimator, kw", [
    (DPDA, {"epsilon": 4.0}),
    (GDPDA, {"classes": (0, 1)}),
])
def test_dpda_family_trains_on_cuda_with_the_cpu_plan(rng, estimator, kw):
    Xs, ys, Xt = _toy(rng)
    common = dict(epochs=2, batch_size=8, hidden=(4,), random_state=0, **kw)
    gpu = estimator(device="cuda", **common).fit_domains(Xs, ys, Xt)
    cpu = estimator(device="cpu", **common).fit_domains(Xs, ys, Xt)
    assert _devices(gpu.network_) == {"cpu"}
    assert set(np.unique(gpu.predict(Xt))) <= {0, 1}
    assert gpu.n_steps_ == cpu.n_steps_
    assert [g.epsilon for g in gpu.guarantees_.values()] == pytest.approx([g.epsilon for g in cpu.guarantees_.values()])


def test_dpswd_trains_on_cuda_with_the_cpu_plan(rng):
    Xs, ys, Xt = _toy(rng)
    common = dict(epsilon=3.0, delta=1e-4, epochs=1, min_steps=3, batch_size=8, random_state=0)
    gpu = DPSWDAdapter(device="cuda", **common).fit_domains(Xs, ys, Xt)
    cpu = DPSWDAdapter(device="cpu", **common).fit_domains(Xs, ys, Xt)
    assert _devices(gpu.train_result_.g) == {"cpu"} and _devices(gpu.train_result_.h) == {"cpu"}
    assert set(np.unique(gpu.predict(Xt))) <= {0, 1}
    assert gpu.train_result_.guarantee.epsilon == pytest.approx(cpu.train_result_.guarantee.epsilon)
