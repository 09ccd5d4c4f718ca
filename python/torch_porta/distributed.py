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
torch.distributed.new_group(ranks) makes a subgroup on an MPI communicator
of its own; all_to_all and all_to_all_single (even or uneven splits) work
on the world and on subgroups.

Calls are asynchronous: each is queued on libporta's communication thread
(the one thread that calls MPI) and returns a work at once; wait() blocks
until it is done and raises its error, and its future completes on a
notifying thread as the call finishes. DDP all-reduces each bucket from
its backward hook as soon as the bucket is ready, and backward goes on
computing meanwhile. Results land in
place in CPU tensors and in porta tensors on the CPU backend; porta tensors
that must be staged (devices without host memory, strided layouts) and list
forms that copy results into several tensors are finished on the issuing
thread, so those calls return complete. PORTA_DIST_SYNC=1 makes every call
wait before it returns (no overlap). Each
call waits at most the timeout: PORTA_DIST_TIMEOUT (seconds), else the
`timeout` given to init_process_group when it is not PyTorch's default,
else 60 s. A rank that dies or hangs makes the others raise an error naming
it; after that the process group is unusable and the process should exit.

ZeRO-1 (optimizer state sharded across ranks) is PyTorch's own
torch.distributed.optim.ZeroRedundancyOptimizer, which runs on this backend
unchanged, as do FSDP2 (torch.distributed.fsdp.fully_shard) and DTensor
(init_device_mesh("porta", ...)). save_checkpoint / load_checkpoint
(_dist_checkpoint.py) write and restore model and optimizer state as
safetensors files, ZeRO shards included.
"""
import atexit
import datetime
import fcntl
import math
import os
import socket
import struct
import sys
import threading

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import (
    AllgatherOptions, AllreduceCoalescedOptions, AllreduceOptions, AllToAllOptions,
    BarrierOptions, BroadcastOptions, GatherOptions, ReduceOp, ReduceOptions,
    ReduceScatterOptions, ScatterOptions)
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


def _contiguous(tensor):
    return tensor if tensor.is_contiguous() else tensor.contiguous()


class _Started:
    """One call queued on libporta's communication thread: its work handle,
    what must stay alive until it is done (CPU memory MPI reads or writes),
    and, for a strided CPU tensor, the copy of the result into it."""

    def __init__(self, handle, keep=(), after=None):
        self.handle = handle
        self.keep = keep
        self.after = after


def _start_all_reduce(tensor, op, group=None):
    _check_device(tensor)
    code = _op_code(op)
    if tensor.device.type == "porta":
        return _Started(_C.dist_all_reduce_start(_tensors.unwrap(tensor), code, group))
    flat = _contiguous(tensor)
    return _Started(_C.dist_all_reduce_host_start(*_host_args(flat), code, group), (flat,),
                    None if flat is tensor else lambda: tensor.copy_(flat))


def _start_broadcast(tensor, root, group=None):
    _check_device(tensor)
    if tensor.device.type == "porta":
        return _Started(_C.dist_broadcast_start(_tensors.unwrap(tensor), root, group))
    flat = _contiguous(tensor)
    return _Started(_C.dist_broadcast_host_start(*_host_args(flat), root, group), (flat,),
                    None if flat is tensor else lambda: tensor.copy_(flat))


def _same_kind(output, input, what):
    if output.device != input.device or output.dtype != input.dtype:
        raise ValueError(f"{what}: output ({output.dtype} on {output.device}) and input "
                         f"({input.dtype} on {input.device}) must have one dtype and device")


def _start_all_gather(output, input, size, group=None):
    """output holds `size` blocks of input's elements, rank order."""
    _check_device(input)
    _same_kind(output, input, "all_gather")
    if input.device.type == "porta":
        return _Started(_C.dist_all_gather_start(_tensors.unwrap(input),
                                                 _tensors.unwrap(output), group))
    if output.numel() != input.numel() * size:
        raise ValueError(f"all_gather: output must hold {size} x {input.numel()} elements, "
                         f"given {output.numel()}")
    source, target = _contiguous(input), _contiguous(output)
    return _Started(_C.dist_all_gather_host_start(source.data_ptr(), target.data_ptr(),
                                                  source.numel(),
                                                  _dtypes.to_porta(source.dtype), group),
                    (source, target), None if target is output else lambda: output.copy_(target))


def _start_reduce_scatter(output, input, op, size, group=None):
    """output gets op over the ranks of input's block number `rank`."""
    _check_device(input)
    _same_kind(output, input, "reduce_scatter")
    code = _op_code(op)
    if input.device.type == "porta":
        return _Started(_C.dist_reduce_scatter_start(_tensors.unwrap(input),
                                                     _tensors.unwrap(output), code, group))
    if input.numel() != output.numel() * size:
        raise ValueError(f"reduce_scatter: input must hold {size} x {output.numel()} "
                         f"elements, given {input.numel()}")
    source, target = _contiguous(input), _contiguous(output)
    return _Started(_C.dist_reduce_scatter_host_start(source.data_ptr(), target.data_ptr(),
                                                      target.numel(),
                                                      _dtypes.to_porta(target.dtype), code,
                                                      group),
                    (source, target), None if target is output else lambda: output.copy_(target))


def _row_counts(tensor, splits, size, what):
    """Elements per rank of a split along dim 0 (None: equal blocks)."""
    if not splits:
        return None
    if len(splits) != size:
        raise ValueError(f"all_to_all: expected {size} {what} split sizes (one per rank), "
                         f"given {len(splits)}")
    rows = tensor.shape[0] if tensor.dim() > 0 else 1
    row = math.prod(tensor.shape[1:]) if tensor.dim() > 0 else 1
    if sum(splits) != rows:
        raise ValueError(f"all_to_all: {what} split sizes add up to {sum(splits)} rows, the "
                         f"tensor has {rows}")
    return [int(n) * row for n in splits]


def _start_all_to_all(output, input, output_splits, input_splits, size, group=None):
    """input's rows, split by input_splits (equal when empty), go to the
    ranks in order; output gets every rank's block for this one, rank order."""
    _check_device(input)
    _same_kind(output, input, "all_to_all")
    send = _row_counts(input, input_splits, size, "input")
    receive = _row_counts(output, output_splits, size, "output")
    if input.device.type == "porta":
        return _Started(_C.dist_all_to_all_start(_tensors.unwrap(input), send,
                                                 _tensors.unwrap(output), receive, group))
    source, target = _contiguous(input), _contiguous(output)
    if send is None:
        if source.numel() % size:
            raise ValueError(f"all_to_all: {source.numel()} input elements do not split into "
                             f"{size} equal blocks")
        send = [source.numel() // size] * size
    if receive is None:
        if target.numel() % size:
            raise ValueError(f"all_to_all: {target.numel()} output elements do not split "
                             f"into {size} equal blocks")
        receive = [target.numel() // size] * size
    return _Started(_C.dist_all_to_all_host_start(source.data_ptr(), send, target.data_ptr(),
                                                  receive, _dtypes.to_porta(source.dtype),
                                                  group),
                    (source, target), None if target is output else lambda: output.copy_(target))


def _start_send(tensor, dst, tag, group=None):
    _check_device(tensor)
    if tensor.device.type == "porta":
        return _Started(_C.dist_send_start(_tensors.unwrap(tensor), dst, tag, group))
    flat = _contiguous(tensor)
    return _Started(_C.dist_send_host_start(*_host_args(flat), dst, tag, group), (flat,))


def _start_recv(tensor, src, tag, group=None):
    _check_device(tensor)
    if tensor.device.type == "porta":
        return _Started(_C.dist_recv_start(_tensors.unwrap(tensor), src, tag, group))
    flat = _contiguous(tensor)
    return _Started(_C.dist_recv_host_start(*_host_args(flat), src, tag, group), (flat,),
                    None if flat is tensor else lambda: tensor.copy_(flat))


def _synchronous():
    """PORTA_DIST_SYNC=1: every call waits before it returns (no overlap);
    the benchmark compares the two."""
    return os.environ.get("PORTA_DIST_SYNC", "0") not in ("", "0")


class _PortaWork(dist.Work):
    """Calls queued on libporta's communication thread. wait() blocks until
    they are done and raises their error; get_future()'s future completes
    as the last one finishes (on libporta's notifying thread, while the
    communication thread goes on to the next call; DDP chains its bucket's
    work on it), with `result`, or with the error as a DistBackendError
    (a RuntimeError) that C++ readers of the future, DDP's reducer among
    them, see raised too.

    Results land in place in CPU tensors and in porta tensors on host
    memory. A porta tensor that is staged (a device without host memory, a
    strided layout) gets its result on the waiting thread, in libporta's
    wait: such calls are waited for here at once, so their future is
    complete when the call returns. `then` (on the issuing thread, after
    every call is done) finishes list forms on porta tensors the same way."""

    def __init__(self, started, result, then=None):
        super().__init__()
        self._started = list(started)
        self._result = result
        self._future = Future()
        self._lock = threading.Lock()
        self._pending = len(self._started)
        self._error = None
        staged = any(_C.dist_work_needs_wait(s.handle) for s in self._started)
        if then is not None or staged or _synchronous():
            self._wait_all()  # results written back here, on the issuing thread
            if then is not None:
                then()
        if not self._started:
            self._future.set_result(result)
        for s in self._started:
            _C.dist_work_on_done(s.handle, self._one_done)

    def _wait_all(self):
        for s in self._started:
            _C.dist_work_wait(s.handle)

    def _one_done(self, error):
        """On libporta's notifying thread (or here, when already done), with the GIL."""
        with self._lock:
            if error is not None and self._error is None:
                self._error = error
            self._pending -= 1
            last = self._pending == 0
        if not last:
            return
        if self._error is not None:
            _C.fail_future(self._future, self._error)
            return
        try:
            for s in self._started:
                if s.after is not None:
                    s.after()  # strided CPU tensors: the copy back
        except Exception as error:  # noqa: BLE001 - handed to the waiter
            _C.fail_future(self._future, str(error))
            return
        self._future.set_result(self._result)

    def wait(self, timeout=None):
        try:
            self._wait_all()  # raises the call's error, timeouts naming the rank
        except RuntimeError:
            try:  # the future fails too, on the notifying thread
                self._future.wait()
            except RuntimeError:
                pass
            raise
        self._future.wait()  # the strided copies back, run as the last one finished
        return True

    def is_completed(self):
        return self._future.done()

    def is_success(self):
        return self._future.done() and self._error is None

    def get_future(self):
        return self._future

    def result(self):
        return self._result


def _flat_like(tensors, count):
    first = tensors[0]
    return torch.empty(count, dtype=first.dtype, device=first.device)


class ProcessGroupPorta(dist.ProcessGroup):
    """PyTorch's ProcessGroup over porta_dist: the whole MPI world, or a
    subgroup of its ranks (torch.distributed.new_group) on a communicator of
    its own. Collectives are queued on libporta's communication thread and
    return a work at once."""

    def __init__(self, rank, size, group=None, world_ranks=None, name=""):
        super().__init__(rank, size)
        self._rank = rank
        self._size = size
        self._group = group  # None: the world; else a porta_dist_group capsule
        self._world_ranks = world_ranks
        self._name = name

    @property
    def group_name(self):
        """PyTorch's name of the group (destroy_process_group looks it up):
        PyTorch stores it in a group's backends, which this group has none of."""
        return self._name

    @property
    def _device_types(self):
        """The devices whose tensors the group takes. PyTorch lists those of a
        group's registered backends, which this group has none of; its
        state-dict broadcasts (torch.distributed.checkpoint's
        set_model_state_dict from rank 0) pick their device here."""
        return [torch.device(BACKEND), torch.device("cpu")]

    def _get_backend(self, device):
        """The backend of device's tensors: this group, which is its own
        backend. init_process_group(device_id=...) asks for it, and so do
        FSDP2 and DeviceMesh (which read what the backend supports)."""
        device = torch.device(device)
        if device.type not in (BACKEND, "cpu"):
            raise RuntimeError(f"No backend type associated with device type {device.type}: "
                               f"the porta backend takes porta and CPU tensors")
        return self

    @property
    def supports_splitting(self):
        """Subgroups are made by new_group (a communicator of their own),
        never split from this one."""
        return False

    def getBackendName(self):
        return BACKEND

    def size(self):
        return self._size

    def rank(self):
        return self._rank

    def __repr__(self):
        members = "" if self._world_ranks is None else f", world ranks {self._world_ranks}"
        return f"ProcessGroupPorta(rank={self._rank}, size={self._size}{members})"

    def allreduce(self, tensors, opts=AllreduceOptions()):
        return _PortaWork([_start_all_reduce(t, opts.reduceOp, self._group) for t in tensors],
                          tensors)

    def allreduce_coalesced(self, tensors, opts=AllreduceCoalescedOptions()):
        return self.allreduce(tensors, opts)

    def broadcast(self, tensors, opts=BroadcastOptions()):
        return _PortaWork([_start_broadcast(t, opts.rootRank, self._group) for t in tensors],
                          tensors)

    def barrier(self, opts=BarrierOptions()):
        return _PortaWork([_Started(_C.dist_barrier_start(self._group))], None)

    def allgather(self, output_lists, inputs, opts=AllgatherOptions()):
        started, copies = [], []
        for outputs, input in zip(output_lists, inputs):
            if len(outputs) != self._size:
                raise ValueError(f"all_gather: expected {self._size} output tensors, given "
                                 f"{len(outputs)}")
            gathered = _flat_like([input], input.numel() * self._size)
            started.append(_start_all_gather(gathered, input, self._size, self._group))
            copies.append((outputs, gathered))

        def scatter_blocks():
            for outputs, gathered in copies:
                for output, block in zip(outputs, gathered.chunk(self._size)):
                    output.copy_(block.view(output.shape))
        return _PortaWork(started, output_lists, then=scatter_blocks)

    def all_gather_single(self, output, input, opts=AllgatherOptions()):
        return _PortaWork([_start_all_gather(output, input, self._size, self._group)],
                          [output])

    def all_gather_single_coalesced(self, outputs, inputs, opts=AllgatherOptions()):
        return _PortaWork([_start_all_gather(o, i, self._size, self._group)
                           for o, i in zip(outputs, inputs)], outputs)

    def reduce_scatter(self, outputs, input_lists, opts=ReduceScatterOptions()):
        started, copies = [], []
        for output, inputs in zip(outputs, input_lists):
            if len(inputs) != self._size:
                raise ValueError(f"reduce_scatter: expected {self._size} input tensors, "
                                 f"given {len(inputs)}")
            stacked = torch.cat([t.reshape(-1) for t in inputs])
            result = output if output.is_contiguous() else output.contiguous()
            started.append(_start_reduce_scatter(result.view(-1), stacked, opts.reduceOp,
                                                 self._size, self._group))
            if result is not output:
                copies.append((output, result))

        def copy_back():
            for output, result in copies:
                output.copy_(result)
        return _PortaWork(started, outputs, then=copy_back if copies else None)

    def reduce_scatter_single(self, output, input, opts=ReduceScatterOptions()):
        return _PortaWork([_start_reduce_scatter(output, input, opts.reduceOp, self._size,
                                                 self._group)], [output])

    def reduce_scatter_single_coalesced(self, outputs, inputs, opts=ReduceScatterOptions()):
        return _PortaWork([_start_reduce_scatter(o, i, opts.reduceOp, self._size, self._group)
                           for o, i in zip(outputs, inputs)], outputs)

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes,
                      opts=AllToAllOptions()):
        return _PortaWork([_start_all_to_all(output, input, output_split_sizes,
                                             input_split_sizes, self._size, self._group)],
                          [output])

    def alltoall(self, outputs, inputs, opts=AllToAllOptions()):
        """The list form: inputs[r] goes to rank r, outputs[r] comes from rank r."""
        if len(inputs) != self._size or len(outputs) != self._size:
            raise ValueError(f"all_to_all: expected {self._size} input and output tensors, "
                             f"given {len(inputs)} and {len(outputs)}")
        for tensor in list(inputs) + list(outputs):
            _same_kind(tensor, inputs[0], "all_to_all")
        send = torch.cat([t.reshape(-1) for t in inputs])
        receive = torch.empty(sum(t.numel() for t in outputs), dtype=inputs[0].dtype,
                              device=inputs[0].device)
        started = _start_all_to_all(receive, send, [t.numel() for t in outputs],
                                    [t.numel() for t in inputs], self._size, self._group)

        def split_blocks():
            for output, block in zip(outputs, receive.split([t.numel() for t in outputs])):
                output.copy_(block.view(output.shape))
        return _PortaWork([started], outputs, then=split_blocks)

    def reduce(self, tensors, opts=ReduceOptions()):
        """op over every rank into rootRank's tensors; the others' tensors
        are left as they were."""
        return _PortaWork([_start_all_reduce(t if self._rank == opts.rootRank else t.clone(),
                                             opts.reduceOp, self._group) for t in tensors],
                          tensors)

    def gather(self, output_lists, inputs, opts=GatherOptions()):
        started, copies = [], []
        for index, input in enumerate(inputs):
            gathered = _flat_like([input], input.numel() * self._size)
            started.append(_start_all_gather(gathered, input, self._size, self._group))
            if self._rank == opts.rootRank:
                copies.append((output_lists[index], gathered))

        def scatter_blocks():
            for outputs, gathered in copies:
                for output, block in zip(outputs, gathered.chunk(self._size)):
                    output.copy_(block.view(output.shape))
        return _PortaWork(started, output_lists, then=scatter_blocks)

    def scatter(self, outputs, input_lists, opts=ScatterOptions()):
        root = opts.rootRank
        started, copies = [], []
        for index, output in enumerate(outputs):
            if self._rank != root:
                started.append(_start_recv(output, root, SCATTER_TAG, self._group))
                continue
            chunks = input_lists[index]
            if len(chunks) != self._size:
                raise ValueError(f"scatter: expected {self._size} input tensors, given "
                                 f"{len(chunks)}")
            for rank, chunk in enumerate(chunks):
                if rank == root:
                    copies.append((output, chunk))
                else:
                    started.append(_start_send(chunk, rank, SCATTER_TAG, self._group))

        def own_chunk():
            for output, chunk in copies:
                output.copy_(chunk)
        return _PortaWork(started, outputs, then=own_chunk if copies else None)

    def send(self, tensors, dst, tag):
        return _PortaWork([_start_send(t, dst, tag, self._group) for t in tensors], None)

    def recv(self, tensors, src, tag):
        return _PortaWork([_start_recv(t, src, tag, self._group) for t in tensors], tensors)


def _timeout_seconds(timeout):
    if os.environ.get("PORTA_DIST_TIMEOUT"):
        return None  # libporta reads it
    default = getattr(dist.constants, "default_pg_timeout", None)
    if timeout is None or timeout == default:
        return DEFAULT_TIMEOUT.total_seconds()
    return timeout.total_seconds()


def _create(options, backend_options=None):
    """The backend of a process group: the world, or (new_group) a subgroup
    whose members torch.distributed lists in world ranks; only members get
    here."""
    _C.dist_init()
    world_rank, world_size = _C.dist_rank(), _C.dist_size()
    rank, size = options.group_rank, options.group_size
    members = list(options.global_ranks_in_group or range(size))
    seconds = _timeout_seconds(options.timeout)
    if seconds is not None:
        _C.dist_set_timeout(seconds)
    if members == list(range(world_size)):
        if (rank, size) != (world_rank, world_size):
            raise ValueError(f"the porta backend runs on MPI's world (rank {world_rank} of "
                             f"{world_size}); given rank {rank} of {size}: launch with "
                             f"`mpirun -np {size}`")
        return ProcessGroupPorta(rank, size, name=options.group_id)
    if len(members) != size or members.index(world_rank) != rank:
        raise ValueError(f"the porta backend: group rank {rank} of {size} does not match world "
                         f"rank {world_rank} among members {members}")
    return ProcessGroupPorta(rank, size, _C.dist_group_new(members), members,
                             options.group_id)


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

dist.Backend.register_backend(BACKEND, _create, extended_api=True,
                               devices=["porta", "cpu"])
_from_mpirun()
atexit.register(_finalize)
