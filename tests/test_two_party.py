"""Iterative two-party exchange: message format, file and socket channels, budgeted rounds across processes."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from dpadapt.privacy import accounting
from dpadapt.privacy.guarantee import Guarantee
from dpadapt.privacy.ledger import Ledger, fingerprint
from dpadapt.protocol import (
    ChannelError,
    FileChannel,
    Message,
    Refused,
    SocketChannel,
    ask,
    serve,
)
from dpadapt.release import raw_rows_in_release

TESTS = Path(__file__).parent
SRC = TESTS.parent / "src"
sys.path.insert(0, str(TESTS))
from _toy_responder import planner

Z, CLIP, DELTA = 2.0, 1.0, 1e-5


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), str(TESTS)]))


def _guarantee() -> Guarantee:
    return Guarantee.from_event(accounting.gaussian_event(Z), party="source", unit="record", relation="replace_one", delta=DELTA, theorem="t")


def test_message_round_trip_and_tampering_is_detected():
    m = Message("answer", {"v": np.arange(5.0)}, params={"note": "x"}, guarantee=_guarantee(), round=3, sender="a", session="s")
    back = Message.from_bytes(m.to_bytes())
    assert back.kind == "answer" and back.round == 3 and back.sender == "a" and back.release_id == m.release_id
    np.testing.assert_array_equal(back["v"], np.arange(5.0))
    assert back.guarantee == m.guarantee
    data = bytearray(m.to_bytes())
    with pytest.raises(ChannelError, match="truncated"):
        Message.from_bytes(bytes(data[: len(data) // 2]))
    pos = data.find(np.arange(5.0).tobytes())
    assert pos > 0
    data[pos + 9] ^= 0x01  # one flipped bit of the payload (np.savez stores it uncompressed)
    with pytest.raises(ChannelError):
        Message.from_bytes(bytes(data))


def test_file_channel_orders_messages_and_times_out(tmp_path):
    a = FileChannel(tmp_path, "a", "b", session="s")
    b = FileChannel(tmp_path, "b", "a", session="s")
    for i in range(3):
        assert a.send(Message("query", {"i": np.array([i])})) == tmp_path / f"a-{i + 1:06d}.msg"
    assert [int(b.receive(1)["i"][0]) for _ in range(3)] == [0, 1, 2]
    assert not list(tmp_path.glob("*.tmp-*"))
    with pytest.raises(ChannelError, match="within"):
        b.receive(timeout=0.1)
    with pytest.raises(ChannelError, match="session"):
        FileChannel(tmp_path, "b", "a", session="other").receive(1)
    small = FileChannel(tmp_path / "small", "a", "b", max_bytes=100)
    with pytest.raises(ChannelError, match="limit"):
        small.send(Message("query", {"big": np.zeros(1000)}))


def test_socket_channel_is_loopback_and_bounded():
    server = SocketChannel.listen()
    assert server.getsockname()[0] == "127.0.0.1"
    port = server.getsockname()[1]
    got = {}

    def peer():
        with SocketChannel.connect(port, "b", "a", max_bytes=10_000) as ch:
            got["first"] = ch.receive(5)
            try:
                ch.receive(5)
            except ChannelError as exc:
                got["error"] = str(exc)

    t = threading.Thread(target=peer)
    t.start()
    with SocketChannel.accept(server, "a", "b", timeout=5) as ch:
        ch.send(Message("query", {"q": np.ones(3)}))
        ch.send(Message("query", {"q": np.ones(5000)}))  # 40 kB > the receiver's 10 kB limit
        t.join(5)
    server.close()
    np.testing.assert_array_equal(got["first"]["q"], np.ones(3))
    assert "limit" in got["error"]


def test_toy_mechanism_noise_is_calibrated(rng):
    X = rng.normal(size=(50, 3))
    plan = planner(X, Z, CLIP, DELTA, np.random.default_rng(1))(Message("query", {"q": np.zeros(3)}))
    draws = np.stack([plan.execute()["step"] for _ in range(4000)])
    sigma = Z * 2 * CLIP / 50
    assert draws.std(axis=0) == pytest.approx(np.full(3, sigma), rel=0.06)
    from dpadapt.privacy.mechanisms import clip_rows

    np.testing.assert_allclose(draws.mean(axis=0), clip_rows(X, CLIP).mean(axis=0), atol=4 * sigma / np.sqrt(4000))


def _responder(tmp_path, ledger: Path, data: Path, transport: list[str]) -> subprocess.Popen:
    cmd = [sys.executable, str(TESTS / "_toy_responder.py"), *transport, "--data", str(data), "--ledger", str(ledger),
           "--z", str(Z), "--clip", str(CLIP), "--delta", str(DELTA)]
    return subprocess.Popen(cmd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _private_data(tmp_path, rng) -> tuple[Path, np.ndarray, np.ndarray]:
    mean = np.array([3.0, -2.0, 1.0])
    X = mean + 0.5 * rng.normal(size=(400, 3))
    path = tmp_path / "private.npy"
    np.save(path, X)
    return path, X, mean


def test_iterative_protocol_over_files_composes_rounds_and_stops_at_the_budget(tmp_path, rng):
    data, X, mean = _private_data(tmp_path, rng)
    ledger_path = tmp_path / "source-ledger.sqlite"
    affordable = 12
    budget = accounting.epsilon(accounting.gaussian_event(Z, affordable), DELTA, "replace_one") * (1 + 1e-6)
    Ledger(ledger_path).set_budget("source", fingerprint(data), budget, DELTA)
    exchange = tmp_path / "exchange"
    proc = _responder(tmp_path, ledger_path, data, ["--dir", str(exchange)])
    channel = FileChannel(exchange, "target", "source", session="toy")
    q = np.zeros(3)
    answers = []
    with pytest.raises(Refused, match="refused"):
        for _ in range(affordable + 5):
            answer = ask(channel, Message("query", {"q": q}), timeout=30)
            answers.append(answer)
            q = q + answer["step"]
    assert proc.wait(30) == 0, proc.stdout.read()
    assert len(answers) == affordable
    assert np.linalg.norm(q - mean) < 0.3  # the iteration converged to the private mean
    for a in answers:
        assert a.guarantee is not None and a.guarantee.party == "source"
        assert raw_rows_in_release(a, X) == []
    ledger = Ledger(ledger_path)
    entries = ledger.history()
    assert [e.state for e in entries] == ["committed"] * affordable
    assert {e.path for e in entries} == {str((exchange / f"source-{i:06d}.msg").resolve()) for i in range(1, affordable + 1)}
    spent = ledger.spent("source", fingerprint(data))
    assert spent.epsilon == pytest.approx(accounting.epsilon(accounting.gaussian_event(Z, affordable), DELTA, "replace_one"))


def test_iterative_protocol_over_a_loopback_socket(tmp_path, rng):
    """The private party's serve loop in a thread, the querier here, over 127.0.0.1."""
    data, X, mean = _private_data(tmp_path, rng)
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.set_budget("source", fingerprint(data), 50.0, DELTA)
    server = SocketChannel.listen()
    port = server.getsockname()[1]
    result = {}

    def private_party():
        with SocketChannel.accept(server, "source", "target", session="toy", timeout=30) as channel:
            plan = planner(X, Z, CLIP, DELTA, np.random.default_rng(0))
            result["rounds"] = serve(channel, plan, ledger=Ledger(ledger.path), party=None, dataset_id=fingerprint(data), method="toy", timeout=30)

    t = threading.Thread(target=private_party)
    t.start()
    with SocketChannel.connect(port, "target", "source", session="toy") as channel:
        q = np.zeros(3)
        for _ in range(8):
            q = q + ask(channel, Message("query", {"q": q}), timeout=30)["step"]
        channel.send(Message("stop"))
    t.join(30)
    server.close()
    assert len(result["rounds"]) == 8
    entries = ledger.history()
    assert len(entries) == 8 and all(e.state == "committed" and e.path is None and e.party == "source" for e in entries)
    assert np.linalg.norm(q - mean) < 0.5
