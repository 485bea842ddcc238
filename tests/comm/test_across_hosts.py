"""Rank programs under torchrun: on one host, and on two "hosts" made of network namespaces.

The two-host test builds two network namespaces joined by a veth pair (addresses in
10.231.0.0/24, which exist only inside the namespaces this test makes), starts one torchrun
agent in each with the same ``fn`` and ``--nnodes=2``, and checks the result and that the
bytes crossed the veth. Everything is bounded in time and removed afterwards; where
namespaces cannot be made (not root, no ``ip``), it skips and says why.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from a2s.cli import main
from minitorch.comm.torchrun import command, plain_json, read_results

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="torchrun needs torch"
)
FN = "minitorch.comm.allreduce:ring_all_reduce"
X = [1.0, 2.0, 3.0, 4.0, 5.0]


def test_the_command_is_torchrun_with_a_static_rendezvous() -> None:
    argv = command(FN, [X], nnodes=2, node_rank=1, master_addr="10.0.0.1", master_port=29600)
    assert argv[1:3] == ["-m", "torch.distributed.run"]
    assert {"--nnodes=2", "--node-rank=1", "--master-addr=10.0.0.1", "--master-port=29600"} <= set(
        argv
    )
    assert argv[argv.index("minitorch.comm.torchrun") + 1] == FN
    with pytest.raises(ValueError, match="module:function"):
        command("ring_all_reduce")
    with pytest.raises(ValueError, match="node_rank"):
        command(FN, nnodes=2, node_rank=2)


def test_plain_json_and_a_missing_rank(tmp_path: Path) -> None:
    assert plain_json({"a": np.arange(3), "b": (np.float32(1.5),)}) == {"a": [0, 1, 2], "b": [1.5]}
    with pytest.raises(FileNotFoundError, match="rank 0 wrote no result"):
        read_results(tmp_path, 1)


def test_the_entry_refuses_to_run_outside_torchrun(capsys: pytest.CaptureFixture[str]) -> None:
    from minitorch.comm import torchrun

    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
    old = os.environ.copy()
    try:
        os.environ.clear()
        os.environ.update(env)
        assert torchrun.main([FN]) == 2
    finally:
        os.environ.clear()
        os.environ.update(old)
    assert "not started by torchrun" in capsys.readouterr().err


def test_a2s_ranks_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ranks", "no_colon"]) == 2
    assert main(["ranks", FN, "[1, 2", "--dry-run"]) == 2
    assert main(["ranks", FN, "[1, 2]", "--dry-run"]) == 0
    assert "torch.distributed.run" in capsys.readouterr().out


def test_a2s_ranks_on_one_host(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    code = main(
        ["ranks", FN, str(X), "--nproc-per-node", "2", "--out", str(out), "--master-port", "29517"]
    )
    assert code == 0
    assert read_results(out, 2) == [[2 * v for v in X]] * 2
    assert "rank 1: [2.0, 4.0" in capsys.readouterr().out


def _ip(*args: str, ns: str | None = None) -> None:
    pre = ["ip", "netns", "exec", ns] if ns else []
    subprocess.run([*pre, "ip", *args], check=True, capture_output=True, timeout=10)


@pytest.fixture
def two_hosts() -> Iterator[tuple[str, str]]:
    """Two namespaces a veth apart: ``a2s0`` is 10.231.0.1 in the first, .2 in the second."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("two hosts from network namespaces need root and iproute2 (`ip`)")
    tag = f"{os.getpid() % 100000}"
    ns = (f"a2s-h0-{tag}", f"a2s-h1-{tag}")
    try:
        for name in ns:
            _ip("netns", "add", name)
        _ip("link", "add", f"a2s{tag}a", "type", "veth", "peer", "name", f"a2s{tag}b")
        for i, (name, end) in enumerate(zip(ns, "ab", strict=True)):
            _ip("link", "set", f"a2s{tag}{end}", "netns", name)
            _ip("link", "set", f"a2s{tag}{end}", "name", "a2s0", ns=name)
            _ip("addr", "add", f"10.231.0.{i + 1}/24", "dev", "a2s0", ns=name)
            _ip("link", "set", "a2s0", "up", ns=name)
            _ip("link", "set", "lo", "up", ns=name)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        for name in ns:
            subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=10)
        err = getattr(exc, "stderr", b"") or b""
        pytest.skip(f"network namespaces not allowed here: {err.decode().strip()}")
    try:
        yield ns
    finally:
        for name in ns:  # deleting a namespace deletes its end of the veth
            subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=10)


def test_the_same_function_on_two_hosts(two_hosts: tuple[str, str], tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = dict(os.environ, GLOO_SOCKET_IFNAME="a2s0", PYTHONPATH=os.getcwd())
    procs = []
    for node, name in enumerate(two_hosts):
        argv = command(
            FN,
            [X],
            nproc_per_node=1,
            nnodes=2,
            node_rank=node,
            master_addr="10.231.0.1",
            master_port=29519,
            out=out,
            python=sys.executable,
        )
        procs.append(
            subprocess.Popen(
                ["ip", "netns", "exec", name, *argv],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
        )
    logs = []
    try:
        for p in procs:
            logs.append(p.communicate(timeout=150)[0].decode(errors="replace"))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(10)
    assert [p.returncode for p in procs] == [0, 0], "\n".join(s[-2000:] for s in logs)
    assert read_results(out, 2) == [[2 * v for v in X]] * 2
    rx = subprocess.run(
        ["ip", "netns", "exec", two_hosts[1], "cat", "/sys/class/net/a2s0/statistics/rx_bytes"],
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    )
    assert int(rx.stdout) > 8 * len(X)  # the second host's bytes came over the veth
