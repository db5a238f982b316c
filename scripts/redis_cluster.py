#!/usr/bin/env python3
"""A throwaway Redis Cluster on loopback for ``make test-cluster``: start, run a command, stop.

``python scripts/redis_cluster.py [--primaries 3] [--replicas 1] -- COMMAND ...``

Starts ``primaries × (1 + replicas)`` ``redis-server --cluster-enabled yes`` processes on
free high loopback ports (never 6379), joins them with ``redis-cli --cluster create
--cluster-replicas N --cluster-yes``, waits until every node reports ``cluster_state:ok``,
agrees on the slot map and every replica's link to its primary is up, then runs COMMAND
with these in its environment:

* ``KARTY_TEST_CLUSTER`` — ``redis+cluster://127.0.0.1:P1,127.0.0.1:P2,...`` (the store's URL form)
* ``KARTY_TEST_CLUSTER_NODES`` — JSON ``[{port, dir, pidfile, argv}]``: a test that kills a
  node (SIGKILL by the pid in ``pidfile``) can start it again with ``argv``; redis-server
  rewrites ``pidfile``, so the stop below still finds it.

Every server is stopped by process id (the pid the harness started, and the one in its
pidfile if a test restarted it), and its directory removed, also when COMMAND fails or
the harness is interrupted. Exit status: COMMAND's, or 2 when the cluster could not be
made. Needs only ``redis-server`` and ``redis-cli`` (Debian's redis-server package).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HOST = "127.0.0.1"
NODE_TIMEOUT_MS = 1500  # how long a primary may be silent before its replica takes over


def _free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((HOST, port))
        except OSError:
            return False
    return True


def free_ports(n: int, low: int = 20000, high: int = 50000) -> list[int]:
    """``n`` ports free on loopback whose cluster bus ports (+10000) are free too."""
    rng = random.Random()
    ports: list[int] = []
    for _ in range(10_000):
        p = rng.randrange(low, high)
        if p in ports or p + 10000 in ports or p - 10000 in ports:
            continue
        if _free(p) and _free(p + 10000):
            ports.append(p)
            if len(ports) == n:
                return ports
    raise RuntimeError("no free ports")


def cli(port: int, *args: str, timeout: float = 5.0) -> str:
    out = subprocess.run(["redis-cli", "-h", HOST, "-p", str(port), *args], capture_output=True, text=True,
                         timeout=timeout, check=False)
    return out.stdout


class Node:
    def __init__(self, port: int, root: Path) -> None:
        self.port = port
        self.dir = root / str(port)
        self.dir.mkdir(parents=True)
        self.pidfile = self.dir / "redis.pid"
        self.argv = [
            shutil.which("redis-server") or "redis-server",
            "--port", str(port), "--bind", HOST, "--protected-mode", "no",
            "--cluster-enabled", "yes", "--cluster-config-file", str(self.dir / "nodes.conf"),
            "--cluster-node-timeout", str(NODE_TIMEOUT_MS), "--cluster-replica-validity-factor", "0",
            "--dir", str(self.dir), "--pidfile", str(self.pidfile), "--logfile", str(self.dir / "redis.log"),
            "--save", "", "--appendonly", "no",
            "--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0",
        ]
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)

    def pids(self) -> set[int]:
        pids = set()
        if self.proc is not None and self.proc.poll() is None:
            pids.add(self.proc.pid)
        with contextlib.suppress(OSError, ValueError):
            pid = int(self.pidfile.read_text().strip())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()  # e.g. "redis-server 127.0.0.1:7000 [cluster]"
            if b"redis-server" in cmdline and str(self.port).encode() in cmdline:
                pids.add(pid)  # a restart by a test: still this node
        return pids

    def stop(self) -> None:
        pids = self.pids()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 5
        while pids and time.monotonic() < deadline:
            pids = {p for p in pids if _alive(p)}
            if self.proc is not None:
                self.proc.poll()
            time.sleep(0.05)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if self.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)

    def info(self) -> dict:
        return {"port": self.port, "dir": str(self.dir), "pidfile": str(self.pidfile), "argv": self.argv}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie child counts as gone
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    return False


def wait_until(what: str, check, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if check():
                return
        time.sleep(0.1)
    raise RuntimeError(f"timed out waiting for {what}")


def cluster_ready(nodes: list[Node], primaries: int) -> bool:
    """Every node says ``ok`` with all slots assigned, and every replica's link is up."""
    masters = 0
    for n in nodes:
        info = cli(n.port, "cluster", "info")
        if "cluster_state:ok" not in info or "cluster_slots_assigned:16384" not in info:
            return False
        if f"cluster_known_nodes:{len(nodes)}" not in info:
            return False
        repl = cli(n.port, "info", "replication")
        if "role:master" in repl:
            masters += 1
        elif "master_link_status:up" not in repl:
            return False
    return masters == primaries


class ClusterError(RuntimeError):
    """The cluster could not be made (its nodes' last log lines are in the message)."""


def start_cluster(primaries: int = 3, replicas: int = 1) -> tuple[list[Node], Path, str]:
    """Start ``primaries × (1 + replicas)`` nodes on free loopback ports, join and wait for them.

    Returns ``(nodes, root, url)``: the nodes, their temporary directory and the store's
    ``redis+cluster://127.0.0.1:P1,...`` URL. Raises :class:`ClusterError` (after stopping
    whatever it started) when the cluster could not be made. Stop it with :func:`stop_cluster`.
    """
    root = Path(tempfile.mkdtemp(prefix="karty-cluster-"))
    nodes = [Node(p, root) for p in free_ports(primaries * (1 + replicas))]
    try:
        for n in nodes:
            n.start()
        for n in nodes:
            wait_until(f"redis-server on {n.port}", lambda n=n: cli(n.port, "ping").strip() == "PONG", 20)
        created = subprocess.run(
            ["redis-cli", "--cluster", "create", *(f"{HOST}:{n.port}" for n in nodes),
             "--cluster-replicas", str(replicas), "--cluster-yes"],
            capture_output=True, text=True, timeout=60, check=False,
        )
        if created.returncode != 0:
            raise RuntimeError(f"redis-cli --cluster create failed:\n{created.stdout}\n{created.stderr}")
        wait_until("the cluster to be ok", lambda: cluster_ready(nodes, primaries), 60)
    except BaseException as exc:
        logs = [str(exc)]
        for n in nodes:
            log = n.dir / "redis.log"
            if log.exists():
                logs.append(f"--- {log} (last lines)\n" + "\n".join(log.read_text().splitlines()[-10:]))
        stop_cluster(nodes, root)
        if isinstance(exc, Exception):
            raise ClusterError("\n".join(logs)) from exc
        raise
    return nodes, root, "redis+cluster://" + ",".join(f"{HOST}:{n.port}" for n in nodes)


def stop_cluster(nodes: list[Node], root: Path) -> None:
    """Stop every node by pid (:meth:`Node.stop`) and remove their directory."""
    for n in nodes:
        n.stop()
    shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--primaries", type=int, default=3)
    parser.add_argument("--replicas", type=int, default=1, help="replicas per primary")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give a command to run after --")
    if not shutil.which("redis-server") or not shutil.which("redis-cli"):
        print("redis_cluster: redis-server and redis-cli are needed (apt-get install redis-server)", file=sys.stderr)
        return 2

    def interrupted(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupted)
    child: subprocess.Popen | None = None
    try:
        nodes, root, url = start_cluster(args.primaries, args.replicas)
    except ClusterError as exc:
        print(f"redis_cluster: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    try:
        print(f"redis_cluster: {args.primaries} primaries + {args.primaries * args.replicas} replicas at {url}",
              flush=True)
        env = {**os.environ, "KARTY_TEST_CLUSTER": url,
               "KARTY_TEST_CLUSTER_NODES": json.dumps([n.info() for n in nodes])}
        child = subprocess.Popen(command, env=env)
        return child.wait()
    except KeyboardInterrupt:
        if child is not None and child.poll() is None:
            child.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=10)
        return 130
    finally:
        stop_cluster(nodes, root)


if __name__ == "__main__":
    sys.exit(main())
