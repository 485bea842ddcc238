"""The socket transport: framing over a socketpair, and one real ping-pong on loopback."""

from __future__ import annotations

import socket

import numpy as np

from minitorch.comm import transport


def test_length_prefixed_messages_keep_their_boundaries() -> None:
    a, b = socket.socketpair()
    with a, b:
        for msg in (b"", b"x", bytes(range(256)) * 40):
            transport.send_msg(a, msg)
        assert [len(transport.recv_msg(b)) for _ in range(3)] == [0, 1, 10240]


def test_ping_pong_measures_every_size() -> None:
    t = transport.ping_pong([1, 1 << 20], reps=3, warmup=1)
    assert t.shape == (2,) and np.all(t > 0)
