"""Real collectives on this computer's CPU: processes that talk through gloo on the
loopback, and the bytes each of them writes.

The independent reference for ``collectives`` and the pages' splits, in the spirit of
``reference_model``: nothing here computes a formula. ``run(task, devices, *args)``
starts ``devices`` processes, joins them into one ``torch.distributed`` group with the
gloo backend (the same calls a GPU program makes with NCCL), runs ``task(rank, devices,
*args)`` in each and returns what each returned, in rank order.

- The processes are forked from one server process that imported torch once
  (``multiprocessing``'s forkserver), so each starts in milliseconds and none inherits
  the caller's threads. They meet through a store the caller holds on 127.0.0.1, on a
  port the system picks, so parallel runs never collide; nothing leaves the loopback.
- ``Handed`` counts the bytes of the tensors a task hands to each collective.
- ``written()`` reads how many bytes this process has written so far (Linux's
  ``/proc/self/io``). Gloo sends every message over TCP behind a 48-byte header (six
  eight-byte fields, ``gloo/transport/tcp/pair.h``), and every transfer between two
  processes costs three of them (``gloo/transport/tcp/pair.cc``): the sender writes a
  send-ready notice and the data, the receiver a receive-ready notice. So what a
  process writes during a collective is exactly the payload plus 3 x 48 bytes for each
  transfer it takes part in, and ``gloo_transfers`` counts those from gloo's own
  algorithms; a task's processes write nothing else (their standard output and error go
  to ``/dev/null``, and their warnings are silenced).
- Any time measured here is this CPU's, over the loopback: it says nothing about a GPU.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import sys
import traceback
from collections.abc import Callable
from datetime import timedelta

from ..checks import checked_whole

__all__ = ["HEADER_BYTES", "HEADERS_A_TRANSFER", "GLOO_SEGMENT_BYTES", "run",
           "written", "payload_agrees", "gloo_transfers", "Handed"]

HEADER_BYTES = 48
"""Bytes gloo's TCP transport writes before each message (its preamble: six size_t)."""

HEADERS_A_TRANSFER = 3
"""Headers one transfer costs a process that both sends and receives in it: its own
send-ready notice and data message, and its receive-ready notice to the sender."""

GLOO_SEGMENT_BYTES = 2**20
"""The largest segment gloo's ring all-reduce sends at once (``kMaxSegmentSize``)."""

_PRELOAD = ["torch", "torch.distributed", "transformer_arithmetic.runs.gloo",
            "transformer_arithmetic.runs.sharded_runs",
            "transformer_arithmetic.runs.sequence_runs",
            "transformer_arithmetic.runs.sharded_steps",
            "transformer_arithmetic.runs.reference_model", "torch.distributed.fsdp",
            "torch.distributed.device_mesh"]


def gloo_transfers(collective: str, array_bytes: int, devices: int) -> int:
    """Transfers each process takes part in when gloo runs ``collective`` on an array of
    ``array_bytes`` (the whole array, or the gathered one) over ``devices``, as gloo's
    source runs them: its ring all-reduce sends each step's slice in segments (at least
    two a step, of at most ``GLOO_SEGMENT_BYTES``, ``gloo/allreduce.cc``), its ring
    all-gather each step's slice in two halves (``gloo/allgather.cc``), its all-to-all
    one slice to each peer (``gloo/alltoall.cc``); ``exchange`` is one send and one
    receive (a step of the page's own rings)."""
    n = checked_whole("devices", devices, minimum=1)
    x = checked_whole("array_bytes", array_bytes)
    if n == 1:
        return 0
    if collective == "all-reduce":
        segments = max(-(-x // GLOO_SEGMENT_BYTES), 2 * n)
        segments = -(-segments // n) * n
        return 2 * (n - 1) * (segments // n)
    if collective == "all-gather":
        return 2 * (n - 1)
    if collective == "all-to-all":
        return n - 1
    if collective == "exchange":
        return 1
    raise ValueError(f"collective must be all-reduce, all-gather, all-to-all or "
                     f"exchange, got {collective!r}")


def payload_agrees(wrote: int, payload: float, transfers: int) -> bool:
    """Whether ``wrote`` bytes are exactly ``payload`` bytes and the headers of
    ``transfers`` transfers: what a process writes for a payload, seen on the wire (a
    formula one byte off fails)."""
    headers = HEADERS_A_TRANSFER * checked_whole("transfers", transfers)
    return wrote == payload + headers * HEADER_BYTES


def written() -> int:
    """Bytes this process has written (to files, pipes and sockets) since it started."""
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("wchar:"):
                return int(line.split()[1])
    raise RuntimeError("/proc/self/io has no wchar line")


class Handed:
    """The collectives a task calls, each counting the bytes of the tensors handed to
    it (``bytes[name]``)."""

    def __init__(self) -> None:
        self.bytes: dict[str, int] = {}

    def _count(self, name: str, *tensors) -> None:
        size = sum(t.numel() * t.element_size() for t in tensors)
        self.bytes[name] = self.bytes.get(name, 0) + size

    def all_reduce(self, t, name: str = "all-reduce") -> None:
        import torch.distributed as dist

        self._count(name, t)
        dist.all_reduce(t)

    def all_gather(self, out, t, name: str = "all-gather") -> None:
        import torch.distributed as dist

        self._count(name, t)
        dist.all_gather_single(out, t)

    def reduce_scatter(self, out, t, name: str = "reduce-scatter") -> None:
        import torch.distributed as dist

        self._count(name, t)
        dist.reduce_scatter_single(out, t)

    def all_to_all(self, out, t, out_splits=None, in_splits=None,
                   name: str = "all-to-all") -> None:
        import torch.distributed as dist

        self._count(name, t)
        dist.all_to_all_single(out, t, out_splits, in_splits)

    def exchange(self, send, to: int, recv, source: int, name: str = "send") -> None:
        """Send ``send`` to rank ``to`` while receiving ``recv`` from ``source``."""
        import torch.distributed as dist

        self._count(name, send)
        ops = [dist.P2POp(dist.isend, send, to), dist.P2POp(dist.irecv, recv, source)]
        for request in dist.batch_isend_irecv(ops):
            request.wait()


def _child(task: Callable, rank: int, devices: int, port: int, conn, args) -> None:
    """One process of a run: silence its output, join the group, run the task, send
    back ("ok", result) or ("error", the traceback)."""
    answer: tuple = ("error", "the task did not run")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    try:
        import warnings

        import torch
        import torch.distributed as dist

        warnings.filterwarnings("ignore")  # a warning written would count as bytes
        torch.set_num_threads(1)
        store = dist.TCPStore("127.0.0.1", port, devices, is_master=False,
                              timeout=timedelta(seconds=120))
        dist.init_process_group("gloo", store=store, rank=rank, world_size=devices,
                                timeout=timedelta(seconds=120))
        try:
            answer = ("ok", task(rank, devices, *args))
        finally:
            dist.destroy_process_group()
    except BaseException:  # sent back whole: the caller raises it
        answer = ("error", traceback.format_exc())
    try:  # plain pickle: torch's own pickler would share memory with a dying process
        conn.send_bytes(pickle.dumps(answer))
    finally:
        conn.close()


def run(task: Callable, devices: int, *args) -> list:
    """What ``task(rank, devices, *args)`` returned in each of ``devices`` processes
    joined by gloo on the loopback, in rank order (an error in any raises here with its
    traceback). ``task`` must be a module-level function; ``args`` must pickle."""
    import torch.distributed as dist

    devices = checked_whole("devices", devices, minimum=1)
    main = sys.modules["__main__"]
    if not hasattr(main, "__spec__"):  # spawn reads it; an IPython reset deletes it
        main.__spec__ = None
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(_PRELOAD)
    store = dist.TCPStore("127.0.0.1", 0, devices + 1, is_master=True,
                          wait_for_workers=False, timeout=timedelta(seconds=120))
    pipes, processes = [], []
    try:
        for rank in range(devices):
            here, there = context.Pipe(duplex=False)
            p = context.Process(target=_child,
                                args=(task, rank, devices, store.port, there, args))
            p.start()
            there.close()
            pipes.append(here)
            processes.append(p)
        answers = []
        for rank, here in enumerate(pipes):
            try:
                answers.append(pickle.loads(here.recv_bytes()))
            except EOFError:
                answers.append(("error", f"process {rank} ended without an answer"))
    finally:
        for p in processes:
            p.join(timeout=60)
        del store
    failed = [f"rank {r}:\n{a[1]}" for r, a in enumerate(answers) if a[0] != "ok"]
    if failed:
        raise RuntimeError("a gloo run failed:\n" + "\n".join(failed))
    return [a[1] for a in answers]
