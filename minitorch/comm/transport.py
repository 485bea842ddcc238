"""A TCP socket transport between two local processes (127.0.0.1 only), measured.

Messages are length-prefixed: an 8-byte big-endian length, then the payload, so a receiver
knows where one message ends in TCP's byte stream. The echo server runs in a child process
started from :func:`echo_server` (an importable function, so the ``spawn`` start method works
from a notebook); it answers each message with the same bytes and stops on an empty message.
:func:`ping_pong` times round trips per size: half a round trip is one message's time, the
data an alpha-beta fit (``minitorch.comm.fit``) turns into latency and bandwidth.

Lab: 22 (RDMA and transport).
Paper: Hockney, "The communication challenge for MPP", Parallel Computing 20(3), 1994 (the
alpha-beta model); Stevens, "UNIX Network Programming", vol. 1, ch. 3 (framing a byte stream).
"""

from __future__ import annotations

import multiprocessing as mp
import socket
import struct
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection

import numpy as np

__all__ = ["echo_server", "ping_pong", "recv_msg", "send_msg"]

HOST = "127.0.0.1"
_LEN = struct.Struct(">Q")
_MAX_MESSAGES = 1_000_000


def send_msg(sock: socket.socket, payload: bytes) -> None:
    """Send one message: its length, then its bytes."""
    sock.sendall(_LEN.pack(len(payload)) + payload)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            raise ConnectionError("peer closed mid-message")
        got += k
    return bytes(buf)


def recv_msg(sock: socket.socket) -> bytes:
    """Receive one whole message (however TCP split it)."""
    (n,) = _LEN.unpack(_recv_exact(sock, _LEN.size))
    return _recv_exact(sock, n)


def echo_server(ready: Connection) -> None:
    """Child process: listen on a free loopback port, report it, echo until an empty message."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as srv:
        srv.bind((HOST, 0))
        srv.listen(1)
        srv.settimeout(30.0)
        ready.send(srv.getsockname()[1])
        ready.close()
        conn, _ = srv.accept()
        with conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn.settimeout(30.0)
            for _ in range(_MAX_MESSAGES):
                msg = recv_msg(conn)
                send_msg(conn, msg)
                if not msg:
                    return


def ping_pong(sizes: Sequence[int], reps: int = 20, warmup: int = 3) -> np.ndarray:
    """Median one-way time (half a round trip, seconds) per message size, via a child echo."""
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=echo_server, args=(child,), daemon=True)
    proc.start()
    try:
        if not parent.poll(60.0):
            raise TimeoutError("the echo server did not start")
        port = parent.recv()
        out = np.empty(len(sizes))
        with socket.create_connection((HOST, port), timeout=30.0) as sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for i, n in enumerate(sizes):
                payload = bytes(int(n)) or b"\0"
                trips = []
                for r in range(warmup + reps):
                    t0 = time.perf_counter()
                    send_msg(sock, payload)
                    back = recv_msg(sock)
                    if r >= warmup:
                        trips.append(time.perf_counter() - t0)
                    if len(back) != len(payload):
                        raise ConnectionError("echo came back with the wrong length")
                out[i] = float(np.median(trips)) / 2
            send_msg(sock, b"")
            recv_msg(sock)
        return out
    finally:
        parent.close()
        proc.join(timeout=10.0)
        if proc.is_alive():
            proc.terminate()
            proc.join()
