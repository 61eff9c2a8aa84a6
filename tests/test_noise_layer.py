"""Privacy noise is drawn in one place: privacy/mechanisms.py, from a secret NoiseSource (issue 11, hole 1)."""

from __future__ import annotations

import io
import pickle
import tokenize
from pathlib import Path

import numpy as np
import pytest

from dpadapt.privacy.mechanisms import NoiseSource, gaussian, random_streams

SRC = Path(__file__).resolve().parents[1] / "src" / "dpadapt"
SCANNED = ("transport", "alignment", "discrepancy", "deep", "privacy", "methods", "classstats", "baselines")
MECHANISMS = SRC / "privacy" / "mechanisms.py"
#: method names that draw noise (``.normal(``, ``randn(`` ...), wherever they are called from
DRAWS = {"normal", "standard_normal", "laplace", "randn", "gumbel", "exponential"}

#: Draws that are not privacy noise: (path under src/dpadapt, fragment of the line). Each needs a reason.
ALLOWED = {
    # public slicing directions U of DP-SWD: drawn from the public stream and released
    ("transport/swd.py", "rng.standard_normal((int(d), int(k)))"),
    # latent codes fed to the conditional generator while training (not a privacy mechanism)
    ("deep/generator.py", "torch.randn(cfg.batch_size, G.code_dim"),
    # the same, for the generator trained against released sliced marginals (post-processing)
    ("deep/generator.py", "torch.randn(B, G.code_dim"),
    # latent codes when sampling synthetic rows from the trained generator (post-processing)
    ("deep/generator.py", "torch.randn(labels.size, G.code_dim"),
}


def noise_draws(source: str) -> list[tuple[int, str]]:
    """(line number, line) of every call ``x.normal(...)``/``randn(...)``/... in Python ``source`` (code only)."""
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline)
              if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)]
    lines = source.splitlines()
    hits = []
    for i, tok in enumerate(tokens[:-1]):
        if tok.type != tokenize.NAME or tok.string not in DRAWS or tokens[i + 1].string != "(":
            continue
        attribute = i > 0 and tokens[i - 1].string == "."
        if attribute or tok.string == "randn":
            hits.append((tok.start[0], lines[tok.start[0] - 1].strip()))
    return hits


def unexplained_draws(root: Path = SRC) -> list[str]:
    found = []
    for package in SCANNED:
        paths = sorted((root / package).rglob("*.py")) + ([root / f"{package}.py"] if (root / f"{package}.py").exists() else [])
        for path in paths:
            if path == MECHANISMS:
                continue
            rel = path.relative_to(root).as_posix()
            for line_no, line in noise_draws(path.read_text()):
                if not any(rel == p and frag in line for p, frag in ALLOWED):
                    found.append(f"{rel}:{line_no}: {line}")
    return found


def test_the_scanner_finds_draws_and_ignores_comments_and_text():
    src = '''
x = rng.normal(0, 1, size=3)   # a draw
y = torch.randn(3, generator=g)
z = np.random.default_rng(0).laplace(0.0, 1.0)
# rng.normal(0, 1) in a comment
s = "call rng.gumbel(0, 1) in a string"
def normal(a): return a
w = normal(3)
'''
    assert [n for n, _ in noise_draws(src)] == [2, 3, 4]


def test_no_noise_is_drawn_outside_privacy_mechanisms():
    """Expected to fail until every family's branch has moved its noise into privacy/mechanisms.py."""
    found = unexplained_draws()
    assert not found, "noise drawn outside privacy/mechanisms.py:\n" + "\n".join(found)


def test_every_allowed_draw_still_exists():
    """A stale allow-list entry would silently allow a later privacy draw on that line: remove it."""
    stale = []
    for rel, frag in ALLOWED:
        path = SRC / rel
        if not path.exists() or not any(frag in line for _, line in noise_draws(path.read_text())):
            stale.append((rel, frag))
    assert not stale, f"allow-list entries that match nothing: {stale}"


# --- the NoiseSource -----------------------------------------------------------------------------


def test_a_noise_source_cannot_be_pickled():
    _, noise = random_streams(0)
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(noise)
    assert "reproducible=False" in repr(noise)


def _draw(seed: int, reproducible: bool = False) -> tuple[np.ndarray, np.ndarray]:
    public, noise = random_streams(seed, reproducible_noise=reproducible)
    directions = public.standard_normal((4, 3))
    noisy = gaussian(np.zeros(5), sigma=1.0, sensitivity=1.0, noise=noise).value
    return directions, noisy


def test_same_integer_seed_shares_public_randomness_but_not_noise():
    (u1, n1), (u2, n2) = _draw(0), _draw(0)
    np.testing.assert_array_equal(u1, u2)
    assert not np.allclose(n1, n2)


def test_reproducible_noise_repeats_and_differs_from_the_public_stream():
    (u1, n1), (u2, n2) = _draw(0, True), _draw(0, True)
    np.testing.assert_array_equal(n1, n2)
    np.testing.assert_array_equal(u1, u2)
    # the noise is not the public stream's draws replayed
    assert not np.allclose(n1, np.random.default_rng(0).standard_normal(5))
    with pytest.raises(ValueError):
        NoiseSource(None, reproducible=True)
