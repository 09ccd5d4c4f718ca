"""The torch.distributed backend "porta": PyTorch's collectives over MPI,
run by libporta (include/porta_dist.h).

    import torch.distributed as dist
    import torch_porta.distributed  # registers the backend
    dist.init_process_group("porta")

Launch the processes with MPI: `mpirun -np 2 python train.py`. Under mpirun,
importing this module fills in what init_process_group's default env://
rendezvous reads, unless already set (RANK, WORLD_SIZE, LOCAL_RANK, and
MASTER_ADDR/MASTER_PORT: rank 0 sends a free port and its addresses to the
others over MPI, and each takes the one on a network it shares), so scripts
written for torchrun run unchanged, on one host or several. The collectives
themselves run over MPI; the rendezvous store only serves PyTorch's own
bookkeeping. torchrun alone starts processes that each see an MPI world of
one: a WORLD_SIZE of 1 works, a larger one fails at init_process_group
saying to launch with mpirun.

Tensors on "porta" devices and CPU tensors work, of every dtype porta has.
The process group is the whole MPI world (no subgroups of fewer ranks).
Every call is synchronous: the returned work is already complete (DDP
all-reduces each bucket from its backward hook, as soon as the bucket is
ready, while the rest of backward waits). Each
call waits at most the timeout: PORTA_DIST_TIMEOUT (seconds), else the
`timeout` given to init_process_group when it is not PyTorch's default,
else 60 s. A rank that dies or hangs makes the others raise an error naming
it; after that the process group is unusable and the process should exit.

ZeRO-1 (optimizer state sharded across ranks) is PyTorch's own
torch.distributed.optim.ZeroRedundancyOptimizer, which runs on this backend
unchanged. save_checkpoint / load_checkpoint (_dist_checkpoint.py) write and
restore model and optimizer state as safetensors files, ZeRO shards included.
"""
import atexit
import datetime
import fcntl
import os
import socket
import struct
import sys

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import (
    AllgatherOptions, AllreduceCoalescedOptions, AllreduceOptions, BarrierOptions,
    BroadcastOptions, GatherOptions, ReduceOp, ReduceOptions, ReduceScatterOptions,
    ScatterOptions, _create_work_from_future)
from torch.futures import Future

from . import _C, _dtypes, _tensors

BACKEND = "porta"
# The tag of scatter's messages; user send/recv tags should differ.
SCATTER_TAG = 32000
DEFAULT_TIMEOUT = datetime.timedelta(seconds=60)

# porta_dist_op codes (include/porta_dist.h).
_OPS = ((ReduceOp.SUM, 0), (ReduceOp.AVG, 1), (ReduceOp.MAX, 2), (ReduceOp.MIN, 3))


def _op_code(op):
    """ReduceOp and ReduceOp.RedOpType values compare equal; neither hashes
    like the other, so look up by equality."""
    for known, code in _OPS:
        if op == known:
            return code
    raise ValueError(f"the porta backend reduces with SUM, AVG, MAX or MIN, given {op}")


def _host_args(tensor):
    return tensor.data_ptr(), tensor.numel(), _dtypes.to_porta(tensor.dtype)


def _check_device(tensor):
    if tensor.device.type not in ("porta", "cpu"):
        raise ValueError(f"the porta backend takes porta and CPU tensors, given a tensor on "
                         f"{tensor.device}")


class _Staged:
    """A CPU tensor as contiguous memory for MPI: itself, or a copy that is
    written back at the end (when `writes`)."""

    def __init__(self, tensor, writes):
        self.tensor = tensor
        self.writes = writes
        self.contiguous = tensor if tensor.is_contiguous() else tensor.contiguous()

    def __enter__(self):
        return self.contiguous

    def __exit__(self, kind, value, traceback):
        if kind is None and self.writes and self.contiguous is not self.tensor:
            self.tensor.copy_(self.contiguous)


def all_reduce_tensor(tensor, op=ReduceOp.SUM):
    """In place, on a porta or CPU tensor."""
    _check_device(tensor)
    code = _op_code(op)
    if tensor.device.type == "porta":
        _C.dist_all_reduce(_tensors.unwrap(tensor), code)
        return
    with _Staged(tensor, writes=True) as flat:
        _C.dist_all_reduce_host(*_host_args(flat), code)


def broadcast_tensor(tensor, root):
    _check_device(tensor)
    if tensor.device.type == "porta":
        _C.dist_broadcast(_tensors.unwrap(tensor), root)
        return
    with _Staged(tensor, writes=True) as flat:
        _C.dist_broadcast_host(*_host_args(flat), root)


def _same_kind(output, input, what):
    if output.device != input.device or output.dtype != input.dtype:
        raise ValueError(f"{what}: output ({output.dtype} on {output.device}) and input "
                         f"({input.dtype} on {input.device}) must have one dtype and device")


def all_gather_tensor(output, input):
    """output holds world-size blocks of input's elements, rank order."""
    _check_device(input)
    _same_kind(output, input, "all_gather")
    if input.device.type == "porta":
        _C.dist_all_gather(_tensors.unwrap(input), _tensors.unwrap(output))
        return
    if output.numel() != input.numel() * _C.dist_size():
        raise ValueError(f"all_gather: output must hold {_C.dist_size()} x {input.numel()} "
                         f"elements, given {output.numel()}")
    with _Staged(input, writes=False) as source, _Staged(output, writes=True) as target:
        _C.dist_all_gather_host(source.data_ptr(), target.data_ptr(), source.numel(),
                                _dtypes.to_porta(source.dtype))


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM):
    """output gets op over the ranks of input's block number `rank`."""
    _check_device(input)
    _same_kind(output, input, "reduce_scatter")
    code = _op_code(op)
    if input.device.type == "porta":
        _C.dist_reduce_scatter(_tensors.unwrap(input), _tensors.unwrap(output), code)
        return
    if input.numel() != output.numel() * _C.dist_size():
        raise ValueError(f"reduce_scatter: input must hold {_C.dist_size()} x "
                         f"{output.numel()} elements, given {input.numel()}")
    with _Staged(input, writes=False) as source, _Staged(output, writes=True) as target:
        _C.dist_reduce_scatter_host(source.data_ptr(), target.data_ptr(), target.numel(),
                                    _dtypes.to_porta(target.dtype), code)


def send_tensor(tensor, dst, tag=0):
    _check_device(tensor)
    if tensor.device.type == "porta":
        _C.dist_send(_tensors.unwrap(tensor), dst, tag)
        return
    with _Staged(tensor, writes=False) as flat:
        _C.dist_send_host(*_host_args(flat), dst, tag)


def recv_tensor(tensor, src, tag=0):
    _check_device(tensor)
    if tensor.device.type == "porta":
        _C.dist_recv(_tensors.unwrap(tensor), src, tag)
        return
    with _Staged(tensor, writes=True) as flat:
        _C.dist_recv_host(*_host_args(flat), src, tag)


def _done(result):
    future = Future()
    future.set_result(result)
    return _create_work_from_future(future)


def _flat_like(tensors, count):
    first = tensors[0]
    return torch.empty(count, dtype=first.dtype, device=first.device)


class ProcessGroupPorta(dist.ProcessGroup):
    """PyTorch's ProcessGroup over porta_dist: the whole MPI world."""

    def __init__(self, rank, size):
        super().__init__(rank, size)
        self._rank = rank
        self._size = size

    def getBackendName(self):
        return BACKEND

    def size(self):
        return self._size

    def rank(self):
        return self._rank

    def __repr__(self):
        return f"ProcessGroupPorta(rank={self._rank}, size={self._size})"

    def allreduce(self, tensors, opts=AllreduceOptions()):
        for tensor in tensors:
            all_reduce_tensor(tensor, opts.reduceOp)
        return _done(tensors)

    def allreduce_coalesced(self, tensors, opts=AllreduceCoalescedOptions()):
        return self.allreduce(tensors, opts)

    def broadcast(self, tensors, opts=BroadcastOptions()):
        for tensor in tensors:
            broadcast_tensor(tensor, opts.rootRank)
        return _done(tensors)

    def barrier(self, opts=BarrierOptions()):
        _C.dist_barrier()
        return _done(None)

    def allgather(self, output_lists, inputs, opts=AllgatherOptions()):
        for outputs, input in zip(output_lists, inputs):
            if len(outputs) != self._size:
                raise ValueError(f"all_gather: expected {self._size} output tensors, given "
                                 f"{len(outputs)}")
            gathered = _flat_like([input], input.numel() * self._size)
            all_gather_tensor(gathered, input)
            for output, block in zip(outputs, gathered.chunk(self._size)):
                output.copy_(block.view(output.shape))
        return _done(output_lists)

    def all_gather_single(self, output, input, opts=AllgatherOptions()):
        all_gather_tensor(output, input)
        return _done([output])

    def all_gather_single_coalesced(self, outputs, inputs, opts=AllgatherOptions()):
        for output, input in zip(outputs, inputs):
            all_gather_tensor(output, input)
        return _done(outputs)

    def reduce_scatter(self, outputs, input_lists, opts=ReduceScatterOptions()):
        for output, inputs in zip(outputs, input_lists):
            if len(inputs) != self._size:
                raise ValueError(f"reduce_scatter: expected {self._size} input tensors, "
                                 f"given {len(inputs)}")
            stacked = torch.cat([t.reshape(-1) for t in inputs])
            result = output if output.is_contiguous() else output.contiguous()
            reduce_scatter_tensor(result.view(-1), stacked, opts.reduceOp)
            if result is not output:
                output.copy_(result)
        return _done(outputs)

    def reduce_scatter_single(self, output, input, opts=ReduceScatterOptions()):
        reduce_scatter_tensor(output, input, opts.reduceOp)
        return _done([output])

    def reduce_scatter_single_coalesced(self, outputs, inputs, opts=ReduceScatterOptions()):
        for output, input in zip(outputs, inputs):
            reduce_scatter_tensor(output, input, opts.reduceOp)
        return _done(outputs)

    def reduce(self, tensors, opts=ReduceOptions()):
        """op over every rank into rootRank's tensors; the others' tensors
        are left as they were."""
        for tensor in tensors:
            all_reduce_tensor(tensor if self._rank == opts.rootRank else tensor.clone(),
                              opts.reduceOp)
        return _done(tensors)

    def gather(self, output_lists, inputs, opts=GatherOptions()):
        for index, input in enumerate(inputs):
            gathered = _flat_like([input], input.numel() * self._size)
            all_gather_tensor(gathered, input)
            if self._rank == opts.rootRank:
                for output, block in zip(output_lists[index], gathered.chunk(self._size)):
                    output.copy_(block.view(output.shape))
        return _done(output_lists)

    def scatter(self, outputs, input_lists, opts=ScatterOptions()):
        root = opts.rootRank
        for index, output in enumerate(outputs):
            if self._rank != root:
                recv_tensor(output, root, SCATTER_TAG)
                continue
            chunks = input_lists[index]
            if len(chunks) != self._size:
                raise ValueError(f"scatter: expected {self._size} input tensors, given "
                                 f"{len(chunks)}")
            for rank, chunk in enumerate(chunks):
                if rank == root:
                    output.copy_(chunk)
                else:
                    send_tensor(chunk, rank, SCATTER_TAG)
        return _done(outputs)

    def send(self, tensors, dst, tag):
        for tensor in tensors:
            send_tensor(tensor, dst, tag)
        return _done(None)

    def recv(self, tensors, src, tag):
        for tensor in tensors:
            recv_tensor(tensor, src, tag)
        return _done(tensors)


def _timeout_seconds(timeout):
    if os.environ.get("PORTA_DIST_TIMEOUT"):
        return None  # libporta reads it
    default = getattr(dist.constants, "default_pg_timeout", None)
    if timeout is None or timeout == default:
        return DEFAULT_TIMEOUT.total_seconds()
    return timeout.total_seconds()


def _create(store, rank, size, timeout):
    _C.dist_init()
    world_rank, world_size = _C.dist_rank(), _C.dist_size()
    if (rank, size) != (world_rank, world_size):
        raise ValueError(
            f"the porta backend runs on the whole MPI world (rank {world_rank} of "
            f"{world_size}); given rank {rank} of {size} (subgroups are not supported)")
    seconds = _timeout_seconds(timeout)
    if seconds is not None:
        _C.dist_set_timeout(seconds)
    return ProcessGroupPorta(rank, size)


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("", 0))
        return probe.getsockname()[1]


_SIOCGIFADDR, _SIOCGIFNETMASK = 0x8915, 0x891B  # Linux ioctls


def _interface_addresses():
    """(address, netmask) of each IPv4 interface that is up, loopback last."""
    found = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        for _, name in socket.if_nameindex():
            request = struct.pack("256s", name[:15].encode())
            try:
                address = fcntl.ioctl(probe.fileno(), _SIOCGIFADDR, request)[20:24]
                netmask = fcntl.ioctl(probe.fileno(), _SIOCGIFNETMASK, request)[20:24]
            except OSError:  # no IPv4 address
                continue
            found.append((socket.inet_ntoa(address), socket.inet_ntoa(netmask)))
    return sorted(found, key=lambda pair: pair[0].startswith("127."))


def _same_subnet(a, b, netmask):
    mask = int.from_bytes(socket.inet_aton(netmask), "big")
    return (int.from_bytes(socket.inet_aton(a), "big") & mask) == \
        (int.from_bytes(socket.inet_aton(b), "big") & mask)


def _reachable(candidates):
    """Of rank 0's addresses, one on a network this process is on."""
    for address in candidates:
        for mine, netmask in _interface_addresses():
            if not mine.startswith("127.") and _same_subnet(address, mine, netmask):
                return address
    return candidates[0]


def _share_rendezvous():
    """Rank 0's addresses and a free port of it, to every rank over MPI; each
    rank takes the address on a network it shares with rank 0."""
    _C.dist_init()
    message = torch.zeros(4096, dtype=torch.uint8)
    if _C.dist_rank() == 0:
        env = os.environ
        if env.get("OMPI_COMM_WORLD_LOCAL_SIZE") == env.get("OMPI_COMM_WORLD_SIZE"):
            addresses = ["127.0.0.1"]  # every rank on this host
        else:
            addresses = [a for a, _ in _interface_addresses() if not a.startswith("127.")]
        text = " ".join([str(_free_port())] + (addresses or ["127.0.0.1"])).encode()
        message[:len(text)] = torch.tensor(list(text[:message.numel()]), dtype=torch.uint8)
    _C.dist_broadcast_host(message.data_ptr(), message.numel(), _dtypes.to_porta(torch.uint8), 0)
    port, *addresses = bytes(message.tolist()).rstrip(b"\0").decode().split()
    os.environ.setdefault("MASTER_ADDR", _reachable(addresses))
    os.environ.setdefault("MASTER_PORT", port)


def _from_mpirun():
    """Fills in env:// rendezvous variables from Open MPI's, under mpirun."""
    env = os.environ
    if "OMPI_COMM_WORLD_SIZE" not in env:
        return
    env.setdefault("RANK", env["OMPI_COMM_WORLD_RANK"])
    env.setdefault("WORLD_SIZE", env["OMPI_COMM_WORLD_SIZE"])
    env.setdefault("LOCAL_RANK", env.get("OMPI_COMM_WORLD_LOCAL_RANK", "0"))
    env.setdefault("LOCAL_WORLD_SIZE", env.get("OMPI_COMM_WORLD_LOCAL_SIZE", "1"))
    if "MASTER_ADDR" not in env or "MASTER_PORT" not in env:
        _share_rendezvous()


def _finalize():
    # A process ending on an uncaught exception leaves MPI unfinalized:
    # MPI_Finalize would wait for ranks that may be waiting on this one,
    # while exiting at once lets mpirun end the job.
    if getattr(sys, "last_value", None) is not None:
        return
    if _C.dist_is_initialized():
        _C.dist_finalize()


from ._dist_checkpoint import load_checkpoint, save_checkpoint  # noqa: E402,F401

dist.Backend.register_backend(BACKEND, _create, devices=["porta", "cpu"])
_from_mpirun()
atexit.register(_finalize)
