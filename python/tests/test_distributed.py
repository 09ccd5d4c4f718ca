"""The "porta" torch.distributed backend across processes: each test runs
this file under `mpirun -np 2` with a scenario name; the ranks check their
own results and print one line each that the test reads back.

Run a scenario by hand: mpirun -np 2 python python/tests/test_distributed.py collectives
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

# Each scenario starts MPI ranks that need the cores to themselves: timed
# collectives and timeouts must not wait on a neighbouring test.
pytestmark = pytest.mark.serial

SCENARIO_TIMEOUT = 90  # seconds; each scenario takes well under 30


def _mpirun(scenario, extra_env=None, ranks=2, arguments=(), launcher=(),
            options=("--oversubscribe", "--bind-to", "none"), script=__file__):
    """Runs `script scenario arguments...` on each rank (this file's
    scenarios unless another test file names itself)."""
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        pytest.skip("mpirun not found: install Open MPI (openmpi-bin, libopenmpi-dev)")
    from torch_porta import _C
    if not hasattr(_C, "dist_init"):
        pytest.skip("torch_porta._C lacks the porta_dist bindings (python/csrc/dist.c is "
                    "not registered in module.c)")
    env = dict(os.environ)
    env.update({"PORTA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"})
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    if os.geteuid() == 0:
        env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})
    env.update(extra_env or {})
    command = [*launcher, mpirun, "-np", str(ranks), *options,
               sys.executable, os.path.abspath(script), scenario, *arguments]
    start = time.monotonic()
    done = _run(command, env)
    return done, time.monotonic() - start


def _run(command, env):
    """Runs a launcher in a session of its own, so that on a timeout every
    process it started is killed with it, not left behind."""
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=SCENARIO_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        raise AssertionError(f"{command} ran over {SCENARIO_TIMEOUT} s:\n{stdout}{stderr}")
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def _lines(output, prefix):
    """The reports starting with prefix, sorted. mpirun forwards the ranks'
    output as it comes, so two ranks' lines can run together: each report
    is cut at the next one or at the end of its line."""
    return sorted(prefix + part.split("\n")[0] for part in output.split(prefix)[1:])


def test_collectives_on_porta_and_cpu_tensors():
    done, _ = _mpirun("collectives")
    assert done.returncode == 0, done.stdout + done.stderr
    assert _lines(done.stdout, "collectives ok") == [
        "collectives ok rank 0 of 2", "collectives ok rank 1 of 2"], done.stdout + done.stderr


@pytest.mark.parametrize("mode", ["op-by-op", "fused"])
def test_ddp_matches_single_process_training(mode):
    done, _ = _mpirun("ddp", arguments=[mode])
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(_lines(done.stdout, "ddp ok")) == 2, done.stdout + done.stderr


def _has_pjrt_device():
    import torch
    import torch_porta  # noqa: F401  (registers the device)
    return any(torch.porta.get_device_properties(index).backend == "pjrt"
               for index in range(torch.porta.device_count()))


def test_ddp_trains_with_tensors_on_pjrt_devices():
    # Each rank's "porta" is the PJRT device (XLA's CPU plugin in CI): the
    # gradients' buckets are read from and written back to PJRT buffers.
    # Op by op, as that run also trains with ZeRO-1 Adam (fused mode on the
    # PJRT device runs the same collectives, ~25 s more).
    if not _has_pjrt_device():
        pytest.skip("no PJRT device here (make setup installs XLA's CPU plugin)")
    done, _ = _mpirun("ddp", extra_env={"PORTA_VISIBLE_DEVICES": "pjrt,cpu"},
                      arguments=["op-by-op"])
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(_lines(done.stdout, "ddp ok")) == 2, done.stdout + done.stderr
    assert all(" on pjrt: " in line for line in _lines(done.stdout, "ddp ok")), done.stdout


def test_training_resumed_from_a_checkpoint_equals_an_uninterrupted_run(tmp_path):
    pytest.importorskip("safetensors")
    done, _ = _mpirun("checkpoint", arguments=[str(tmp_path / "step3.safetensors")])
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(_lines(done.stdout, "checkpoint ok")) == 2, done.stdout + done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "sgd.safetensors", "step3.safetensors", "step3.safetensors.rank0-of-2",
        "step3.safetensors.rank1-of-2"]


def test_asynchronous_collectives_return_before_they_complete():
    done, _ = _mpirun("async")
    assert done.returncode == 0, done.stdout + done.stderr
    assert _lines(done.stdout, "async ok") == [
        "async ok rank 0 of 2", "async ok rank 1 of 2"], done.stdout + done.stderr


def test_all_to_all_even_uneven_and_list_forms():
    done, _ = _mpirun("all_to_all")
    assert done.returncode == 0, done.stdout + done.stderr
    assert _lines(done.stdout, "all_to_all ok") == [
        "all_to_all ok rank 0 of 2", "all_to_all ok rank 1 of 2"], done.stdout + done.stderr


def test_subgroups_run_collectives_among_their_members_only():
    done, _ = _mpirun("subgroups", ranks=3)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _lines(done.stdout, "subgroups ok") == [
        f"subgroups ok rank {r} of 3" for r in range(3)], done.stdout + done.stderr


def test_a_subgroup_member_that_hangs_is_named_with_its_world_rank():
    done, seconds = _mpirun("subgroup_hang", {"PORTA_DIST_TIMEOUT": "2"}, ranks=3)
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    errors = _lines(done.stdout, "timeout error")
    assert len(errors) == 1, output
    assert "in a subgroup" in errors[0] and "rank 2 did not arrive" in errors[0], errors[0]
    assert seconds < 30, f"took {seconds:.1f} s"


def _run_quiet(*command):
    return subprocess.run(command, capture_output=True, text=True).returncode == 0


def test_ranks_in_separate_network_namespaces_train_over_tcp(tmp_path):
    """Two hosts simulated: a network namespace per rank joined by a veth
    pair; mpirun starts the second rank's daemon inside the other namespace
    (its rsh agent), and the ranks talk over TCP only."""
    ip = shutil.which("ip")
    if ip is None or os.geteuid() != 0:
        pytest.skip("needs root and iproute2 to create network namespaces")
    names = [f"porta{os.getpid()}{side}" for side in "ab"]
    links = [f"pt{os.getpid()}{side}"[:15] for side in "ab"]
    addresses = ["10.77.0.1", "10.77.0.2"]
    if not _run_quiet(ip, "netns", "add", names[0]):
        pytest.skip("cannot create network namespaces here (no CAP_SYS_ADMIN)")
    try:
        assert _run_quiet(ip, "netns", "add", names[1])
        assert _run_quiet(ip, "link", "add", links[0], "type", "veth", "peer", "name", links[1])
        for name, link, address in zip(names, links, addresses):
            assert _run_quiet(ip, "link", "set", link, "netns", name)
            assert _run_quiet(ip, "-n", name, "addr", "add", f"{address}/24", "dev", link)
            assert _run_quiet(ip, "-n", name, "link", "set", link, "up")
            assert _run_quiet(ip, "-n", name, "link", "set", "lo", "up")
        agent = tmp_path / "agent.sh"
        agent.write_text("#!/bin/sh\n"
                         "# Runs a command on a simulated host: in its namespace.\n"
                         "host=\"$1\"; shift\n"
                         f"case \"$host\" in {addresses[0]}) ns={names[0]} ;; "
                         f"{addresses[1]}) ns={names[1]} ;; *) exit 1 ;; esac\n"
                         f"exec {ip} netns exec \"$ns\" sh -c \"$*\"\n")
        agent.chmod(0o755)
        hosts = tmp_path / "hosts"
        hosts.write_text("".join(f"{address} slots=1\n" for address in addresses))
        done, seconds = _mpirun(
            "ddp", launcher=[ip, "netns", "exec", names[0]],
            options=["--hostfile", str(hosts), "--mca", "plm_rsh_agent", str(agent),
                     "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "10.77.0.0/24",
                     "--mca", "oob_tcp_if_include", "10.77.0.0/24"])
    finally:
        for name in names:
            _run_quiet(ip, "netns", "del", name)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    # Two hosts' output may arrive interleaved on one line.
    assert done.stdout.count("ddp ok rank") == 2, output


def test_a_hung_rank_makes_the_others_fail_naming_it():
    done, seconds = _mpirun("hang", {"PORTA_DIST_TIMEOUT": "2"})
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    errors = _lines(done.stdout, "timeout error")
    assert len(errors) == 1, output
    assert "all_reduce" in errors[0] and "rank 1 did not arrive" in errors[0], errors[0]
    waited = float(errors[0].split("after ")[1].split(" s")[0])
    assert 1.9 <= waited < 6, errors[0]
    assert seconds < 30, f"took {seconds:.1f} s"
    # The asynchronous call returned at once; its work was then done (failed).
    issued = _lines(done.stdout, "issued in")
    assert len(issued) == 1 and issued[0].endswith("completed True"), output
    assert float(issued[0].split()[2]) < 0.5, issued[0]


@pytest.mark.parametrize("sync", ["0", "1"])
def test_a_stopped_rank_makes_ddp_backward_fail_naming_it(sync):
    """Rank 1 freezes itself (SIGSTOP) before DDP's backward: rank 0's
    gradient all-reduce times out and backward raises the timeout naming
    rank 1, whether DDP waits on the work's future (asynchronous calls) or
    the call waits itself (PORTA_DIST_SYNC=1); it never crashes."""
    done, seconds = _mpirun("ddp_stopped_rank",
                            {"PORTA_DIST_TIMEOUT": "2", "PORTA_DIST_SYNC": sync})
    output = done.stdout + done.stderr
    for line in _lines(done.stdout, "stopping pid "):
        try:  # a stopped process ignores all but SIGKILL
            os.kill(int(line.split()[2]), signal.SIGKILL)
        except ProcessLookupError:
            pass
    errors = _lines(done.stdout, "backward error")
    assert len(errors) == 1, output
    assert "timed out after 2 s" in errors[0] and "rank 1 did not arrive" in errors[0], errors[0]
    assert "Segmentation fault" not in output and "signal 11" not in output, output
    assert seconds < 30, f"took {seconds:.1f} s"


def test_a_rank_that_never_joins_makes_init_fail_naming_the_wait():
    done, seconds = _mpirun("late", {"PORTA_DIST_TIMEOUT": "2"})
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    errors = _lines(done.stdout, "init error")
    assert len(errors) == 1, output
    assert "init timed out after" in errors[0] and "has not called porta_dist_init" in \
        errors[0], errors[0]
    assert seconds < 30, f"took {seconds:.1f} s"


def test_an_exited_rank_ends_the_job_fast():
    done, seconds = _mpirun("exit", {"PORTA_DIST_TIMEOUT": "20"})
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "collectives ok" not in output
    # mpirun ends the job when a rank exits without finalizing, before any timeout.
    assert "rank 1" in output, output
    assert seconds < 20, f"took {seconds:.1f} s"


def _torchrun(processes):
    """This file's "torchrun" scenario under torchrun (no mpirun)."""
    from torch_porta import _C
    if not hasattr(_C, "dist_init"):
        pytest.skip("torch_porta._C lacks the porta_dist bindings (python/csrc/dist.c is "
                    "not registered in module.c)")
    if not _C.dist_available():
        pytest.skip("Open MPI's libmpi.so.40 is not installed (libopenmpi-dev)")
    env = dict(os.environ)
    env.update({"PORTA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"})
    for name in list(env):
        if name.startswith("OMPI_") or name.startswith("PMIX_"):
            env.pop(name)
    with socket.socket() as probe:  # torchrun's --master_port 0 never starts the workers
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node",
               str(processes), "--master_addr", "127.0.0.1", "--master_port", str(port),
               os.path.abspath(__file__), "torchrun"]
    return _run(command, env)


def test_torchrun_with_one_process_works():
    done = _torchrun(1)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "torchrun ok rank 0 of 1" in done.stdout, done.stdout + done.stderr


def test_torchrun_with_two_processes_says_to_use_mpirun():
    done = _torchrun(2)
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "WORLD_SIZE=2 but MPI sees a world of 1 process" in output, output
    assert "mpirun -np 2" in output, output


# ---------------------------------------------------------------- the ranks


def _check(condition, message):
    if not condition:
        raise AssertionError(message)


def _collectives():
    import torch
    import torch.distributed as dist
    import torch_porta  # noqa: F401
    import torch_porta.distributed  # noqa: F401

    dist.init_process_group("porta")
    rank, size = dist.get_rank(), dist.get_world_size()
    _check(dist.get_backend() == "porta", dist.get_backend())

    def of_rank(r):
        return torch.arange(6, dtype=torch.float64).reshape(2, 3) * (r + 1)

    def values(dtype, device):
        return of_rank(rank).to(dtype).to(device)

    # Devices without host memory (porta:1 is OpenCL where PoCL is installed)
    # are staged through the host.
    devices = ["porta:0", "cpu"] + [f"porta:{i}" for i in range(1, torch_porta.device_count())]
    for device in devices:
        for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16,
                      torch.int64, torch.int32, torch.int8, torch.uint8):
            ops = [dist.ReduceOp.SUM, dist.ReduceOp.MAX, dist.ReduceOp.MIN]
            if dtype.is_floating_point:
                ops.append(dist.ReduceOp.AVG)
            for op in ops:
                tensor = values(dtype, device)
                dist.all_reduce(tensor, op=op)
                stacked = torch.stack([of_rank(r) for r in range(size)])
                want = {dist.ReduceOp.SUM: stacked.sum(0), dist.ReduceOp.MAX: stacked.amax(0),
                        dist.ReduceOp.MIN: stacked.amin(0),
                        dist.ReduceOp.AVG: stacked.mean(0)}[op]
                _check(tensor.device == torch.device(device), tensor.device)
                _check(torch.equal(tensor.cpu(), want.to(dtype)),
                       f"all_reduce {op} {dtype} on {device}: {tensor.cpu()} vs {want}")
        flags = torch.tensor([rank == 0, False, True], device=device)
        dist.all_reduce(flags, op=dist.ReduceOp.MAX)
        _check(flags.cpu().tolist() == [True, False, True], f"bool max {flags}")
        flags = torch.tensor([rank == 0, True], device=device)
        dist.all_reduce(flags, op=dist.ReduceOp.MIN)
        _check(flags.cpu().tolist() == [False, True], f"bool min {flags}")

        one = torch.full((1,), float(rank + 1), device=device)
        dist.all_reduce(one)
        _check(one.cpu().tolist() == [size * (size + 1) / 2], f"one element: {one}")
        empty = torch.empty(0, device=device)
        dist.all_reduce(empty)
        _check(empty.numel() == 0, "empty")

        # A strided tensor (a transpose) is reduced through a staged copy.
        base = values(torch.float32, device)
        strided = base.t()
        dist.all_reduce(strided)
        _check(torch.equal(base.cpu(), sum(of_rank(r) for r in range(size)).float()),
               f"strided all_reduce on {device}: {base.cpu()}")

        gathered = [torch.empty(2, 3, device=device) for _ in range(size)]
        dist.all_gather(gathered, values(torch.float32, device))
        for r in range(size):
            _check(torch.equal(gathered[r].cpu(), of_rank(r).float()),
                   f"all_gather block {r} on {device}")
        flat = torch.empty(size * 2, 3, device=device)
        dist.all_gather_into_tensor(flat, values(torch.float32, device))
        _check(torch.equal(flat.cpu(), torch.cat([t.cpu() for t in gathered])),
               f"all_gather_into_tensor on {device}")

        out = torch.empty(2, 3, device=device)
        inputs = [values(torch.float32, device) + 10 * r for r in range(size)]
        dist.reduce_scatter(out, inputs)
        want = sum(of_rank(q).float() + 10 * rank for q in range(size))
        _check(torch.equal(out.cpu(), want), f"reduce_scatter on {device}: {out.cpu()}")
        out = torch.empty(3, device=device)
        dist.reduce_scatter_tensor(out, torch.arange(3 * size, dtype=torch.float32,
                                                     device=device) * (rank + 1),
                                   op=dist.ReduceOp.MAX)
        want = torch.arange(3 * size, dtype=torch.float32)[3 * rank:3 * rank + 3] * size
        _check(torch.equal(out.cpu(), want), f"reduce_scatter_tensor on {device}")

        tensor = values(torch.float64, device)
        dist.broadcast(tensor, src=1)
        _check(torch.equal(tensor.cpu(), of_rank(1)),
               f"broadcast from 1 on {device}")

        tensor = values(torch.float32, device)
        dist.reduce(tensor, dst=1, op=dist.ReduceOp.MAX)
        want = of_rank(size - 1) if rank == 1 else of_rank(rank)
        _check(torch.equal(tensor.cpu(), want.float()), f"reduce to 1 on {device}")
        gathered = [torch.empty(2, 3, device=device) for _ in range(size)] if rank == 0 else None
        dist.gather(values(torch.float32, device), gathered, dst=0)
        if rank == 0:
            for r in range(size):
                _check(torch.equal(gathered[r].cpu(), of_rank(r).float()),
                       f"gather block {r} on {device}")
        received = torch.empty(2, 3, device=device)
        chunks = [of_rank(r).float().to(device) for r in range(size)] if rank == 1 else None
        dist.scatter(received, chunks, src=1)
        _check(torch.equal(received.cpu(), of_rank(rank).float()), f"scatter on {device}")

        message = torch.full((4,), 7.0 + rank, device=device)
        if rank == 0:
            dist.send(message, dst=1, tag=3)
        else:
            dist.recv(message, src=0, tag=3)
        _check(message.cpu().tolist() == [7.0] * 4, f"send/recv on {device}: {message}")
        dist.barrier()

    # Mismatched arguments fail on the calling rank before any message is sent.
    try:
        dist.all_reduce(torch.ones(2, dtype=torch.int64, device="porta"),
                        op=dist.ReduceOp.AVG)
        raise AssertionError("avg on int64 was accepted")
    except RuntimeError as error:
        _check("avg needs a floating dtype, given int64" in str(error), str(error))

    dist.destroy_process_group()
    print(f"collectives ok rank {rank} of {size}", flush=True)


def _train(model, optimizer, batches):
    import torch
    for inputs, targets in batches:
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(inputs), targets)
        loss.backward()
        optimizer.step()


def _ddp():
    import torch
    import torch.distributed as dist
    import torch_porta  # noqa: F401
    import torch_porta.distributed  # noqa: F401
    from torch.nn.parallel import DistributedDataParallel

    # Fused eager mode: collectives are sync points of the recorded trace.
    if sys.argv[2:] == ["fused"]:
        torch_porta.set_eager_mode("fused")
    dist.init_process_group("porta")
    rank, size = dist.get_rank(), dist.get_world_size()
    backend = torch.porta.get_device_properties(torch.porta.current_device()).backend

    def make_model():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.Tanh(),
                                   torch.nn.Linear(64, 64), torch.nn.Tanh(),
                                   torch.nn.Linear(64, 4)).to("porta")

    generator = torch.Generator().manual_seed(1)
    steps, batch = 6, 16
    data = [(torch.randn(batch, 16, generator=generator),
             torch.randn(batch, 4, generator=generator)) for _ in range(steps)]
    local = batch // size
    shards = [(x[rank * local:(rank + 1) * local].to("porta"),
               y[rank * local:(rank + 1) * local].to("porta")) for x, y in data]

    model = make_model()
    # A small bucket cap splits the gradients into several buckets.
    ddp = DistributedDataParallel(model, bucket_cap_mb=0.01)
    calls = []
    group = dist.distributed_c10d._get_default_group()
    allreduce = group.allreduce

    def counting(tensors, opts=None):
        calls.append(sum(t.numel() for t in tensors))
        return allreduce(tensors, opts) if opts is not None else allreduce(tensors)

    group.allreduce = counting
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    _train(ddp, optimizer, shards[:-1])
    before_last = len(calls)
    _train(ddp, optimizer, shards[-1:])
    group.allreduce = allreduce
    parameters = sum(p.numel() for p in model.parameters())
    # DDP's first step uses one bucket, then rebuilds them to the cap.
    per_step = len(calls) - before_last
    _check(per_step >= 2, f"expected several buckets per step, got {per_step} all_reduce calls")
    _check(sum(calls) == parameters * steps, f"all_reduced {sum(calls)} elements, expected "
                                             f"{parameters * steps}")

    def check(model, make_optimizer, what, rtol):
        """Parameters bitwise equal on every rank, and close to one process
        trained on the global batches."""
        flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
        everyone = torch.empty(size * flat.numel(), device="porta")
        dist.all_gather_single(everyone, flat)
        copies = everyone.cpu().reshape(size, -1)
        for r in range(1, size):
            _check(torch.equal(copies[0], copies[r]),
                   f"{what}: rank {r}'s parameters differ from rank 0's")
        reference = make_model()
        full = [(x.to("porta"), y.to("porta")) for x, y in data]
        _train(reference, make_optimizer(reference.parameters()), full)
        want = torch.cat([p.detach().reshape(-1) for p in reference.parameters()]).cpu()
        initial = torch.cat([p.detach().reshape(-1) for p in make_model().parameters()]).cpu()
        _check(not torch.equal(want, initial), f"{what}: training did not change the parameters")
        difference = (copies[0] - want).abs().max().item()
        _check(torch.allclose(copies[0], want, rtol=rtol, atol=rtol / 10),
               f"{what} vs one process over the global batch: max difference {difference}")
        return difference

    sgd_difference = check(model, lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9), "DDP",
                           1e-5)
    if torch_porta.get_eager_mode() == "fused":  # ZeRO's Adam would add minutes of compiling
        dist.destroy_process_group()
        print(f"ddp ok rank {rank} on {backend}: {per_step} buckets per step, max difference "
              f"{sgd_difference:.3g}", flush=True)
        return

    # ZeRO-1: each rank keeps Adam's state for its own shard of the parameters.
    from torch.distributed.optim import ZeroRedundancyOptimizer
    model = make_model()
    ddp = DistributedDataParallel(model, bucket_cap_mb=0.01)
    zero = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=torch.optim.Adam, lr=0.01)
    _train(ddp, zero, shards)
    held = sum(1 for state in zero.optim.state.values() if state)
    tensors = len(list(model.parameters()))
    _check(0 < held < tensors, f"ZeRO: rank {rank} holds state for {held} of {tensors} tensors")
    zero_difference = check(model, lambda p: torch.optim.Adam(p, lr=0.01), "ZeRO-1 Adam", 1e-4)

    dist.destroy_process_group()
    print(f"ddp ok rank {rank} on {backend}: {per_step} buckets per step, max difference "
          f"{sgd_difference:.3g}; ZeRO-1 state for {held} of {tensors} tensors, max difference "
          f"{zero_difference:.3g}", flush=True)


def _checkpoint():
    import torch
    import torch.distributed as dist
    import torch_porta  # noqa: F401
    from torch.distributed.optim import ZeroRedundancyOptimizer
    from torch.nn.parallel import DistributedDataParallel
    from torch_porta.distributed import load_checkpoint, save_checkpoint

    dist.init_process_group("porta")
    rank, size = dist.get_rank(), dist.get_world_size()
    generator = torch.Generator().manual_seed(2)
    data = [(torch.randn(8, 16, generator=generator), torch.randn(8, 4, generator=generator))
            for _ in range(6)]
    shards = [(x[rank * 4:(rank + 1) * 4].to("porta"), y[rank * 4:(rank + 1) * 4].to("porta"))
              for x, y in data]

    def fresh(zero):
        torch.manual_seed(0)
        model = DistributedDataParallel(torch.nn.Sequential(
            torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4)).to("porta"))
        if zero:
            optimizer = ZeroRedundancyOptimizer(model.parameters(),
                                                optimizer_class=torch.optim.Adam, lr=0.01)
        else:
            optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        return model, optimizer

    def parameters(model):
        return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).cpu()

    path = sys.argv[2]
    for zero, file in ((True, path), (False, os.path.join(os.path.dirname(path),
                                                           "sgd.safetensors"))):
        model, optimizer = fresh(zero)
        _train(model, optimizer, shards)
        uninterrupted = parameters(model)

        model, optimizer = fresh(zero)
        _train(model, optimizer, shards[:3])
        save_checkpoint(file, model, optimizer, step=3)
        del model, optimizer
        model, optimizer = fresh(zero)
        step = load_checkpoint(file, model, optimizer)
        _check(step == 3, f"step {step}")
        _train(model, optimizer, shards[step:])
        resumed = parameters(model)
        _check(torch.equal(uninterrupted, resumed),
               f"{'ZeRO Adam' if zero else 'SGD'}: resumed differs by "
               f"{(uninterrupted - resumed).abs().max().item()}")
    dist.destroy_process_group()
    print(f"checkpoint ok rank {rank} of {size}", flush=True)


def _async():
    """Asynchronous works: a call returns before the other rank has joined
    it, wait() and the future give the result; the tensor is read as
    computed before the call (also when its producer was recorded in fused
    mode) and results are in place when wait() returns."""
    import torch
    import torch.distributed as dist
    import torch_porta
    import torch_porta.distributed  # noqa: F401
    from torch_porta import _C

    dist.init_process_group("porta")
    rank, size = dist.get_rank(), dist.get_world_size()
    devices = ["porta:0", "cpu"] + [f"porta:{i}" for i in range(1, torch_porta.device_count())]
    for device in devices:
        dist.barrier()
        if rank == 1:
            time.sleep(0.5)  # rank 0's call cannot complete before this one joins
        tensor = torch.full((1000,), float(rank + 1), device=device)
        start = time.monotonic()
        work = dist.all_reduce(tensor, async_op=True)
        issued = time.monotonic() - start
        # Devices without host memory are staged: finished on the issuing thread.
        staged = device != "cpu" and not _C.device_name(
            torch.device(device).index or 0).endswith("(cpu)")
        if rank == 0 and not staged:
            _check(issued < 0.3, f"all_reduce on {device} took {issued:.3f} s to return")
            _check(not work.is_completed(), f"all_reduce on {device} completed without rank 1")
        future = work.get_future()
        work.wait()
        _check(work.is_completed() and future.done(), f"{device}: done after wait")
        _check(torch.equal(tensor.cpu(), torch.full((1000,), 3.0)), f"{device}: {tensor}")
        _check(future.wait()[0] is tensor, f"{device}: the future's value")

        # Several works in flight at once, waited for in reverse order.
        tensors = [torch.full((64,), float(rank + i), device=device) for i in range(4)]
        works = [dist.all_reduce(t, op=dist.ReduceOp.MAX, async_op=True) for t in tensors]
        for work in reversed(works):
            work.wait()
        for i, t in enumerate(tensors):
            _check(torch.equal(t.cpu(), torch.full((64,), float(size - 1 + i))),
                   f"{device}: work {i} of 4: {t}")

        # A strided CPU tensor: its result is copied back as the work completes.
        base = torch.zeros(4, 6, device=device) + rank
        view = base.t()
        work = dist.all_reduce(view, async_op=True)
        work.get_future().wait()
        _check(torch.equal(base.cpu(), torch.full((4, 6), 1.0)), f"{device} strided: {base}")

    # Fused mode: the producer of the tensor is recorded, not run, when the
    # call is issued; the call runs it first.
    previous = torch_porta.get_eager_mode()
    torch_porta.set_eager_mode("fused")
    source = torch.arange(8, dtype=torch.float32, device="porta")
    produced = source * (rank + 1) + 1
    work = dist.all_reduce(produced, async_op=True)
    work.wait()
    torch_porta.set_eager_mode(previous)
    want = torch.arange(8, dtype=torch.float32) * 3 + 2
    _check(torch.equal(produced.cpu(), want), f"fused producer: {produced.cpu()} vs {want}")

    # PyTorch's batched point-to-point calls ride on the same works.
    message = torch.full((3,), float(rank), device="porta")
    got = torch.empty(3, device="porta")
    peer = 1 - rank
    ops = [dist.P2POp(dist.isend, message, peer), dist.P2POp(dist.irecv, got, peer)]
    for work in dist.batch_isend_irecv(ops if rank == 0 else ops[::-1]):
        work.wait()
    _check(got.cpu().tolist() == [float(peer)] * 3, f"batch_isend_irecv: {got}")
    dist.destroy_process_group()
    print(f"async ok rank {rank} of {size}", flush=True)


def _all_to_all():
    import torch
    import torch.distributed as dist
    import torch_porta
    import torch_porta.distributed  # noqa: F401

    dist.init_process_group("porta")
    rank, size = dist.get_rank(), dist.get_world_size()
    devices = ["porta:0", "cpu"] + [f"porta:{i}" for i in range(1, torch_porta.device_count())]

    def block(sender, receiver, rows, dtype=torch.float32):
        """What sender sends receiver: `rows` rows of 3 values naming both."""
        return (torch.arange(rows * 3, dtype=torch.float64).reshape(rows, 3) +
                100 * sender + 10 * receiver).to(dtype)

    for device in devices:
        for dtype in (torch.float32, torch.int64, torch.float16):
            # Even split: two rows for each rank.
            input = torch.cat([block(rank, r, 2, dtype) for r in range(size)]).to(device)
            output = torch.empty(2 * size, 3, dtype=dtype, device=device)
            dist.all_to_all_single(output, input)
            want = torch.cat([block(r, rank, 2, dtype) for r in range(size)])
            _check(torch.equal(output.cpu(), want), f"even all_to_all {dtype} on {device}")

        # Uneven: rank s sends rank r (s + r + 1) rows.
        sends = [rank + r + 1 for r in range(size)]
        receives = [s + rank + 1 for s in range(size)]
        input = torch.cat([block(rank, r, sends[r]) for r in range(size)]).to(device)
        output = torch.empty(sum(receives), 3, device=device)
        work = dist.all_to_all_single(output, input, output_split_sizes=receives,
                                      input_split_sizes=sends, async_op=True)
        work.wait()
        want = torch.cat([block(s, rank, receives[s]) for s in range(size)])
        _check(torch.equal(output.cpu(), want), f"uneven all_to_all on {device}")

        # The list form, blocks of different shapes per rank.
        inputs = [block(rank, r, r + 1).to(device) for r in range(size)]
        outputs = [torch.empty(rank + 1, 3, device=device) for _ in range(size)]
        dist.all_to_all(outputs, inputs)
        for s in range(size):
            _check(torch.equal(outputs[s].cpu(), block(s, rank, rank + 1)),
                   f"all_to_all list block from {s} on {device}")

    # Split sizes that do not add up fail on the calling rank.
    try:
        dist.all_to_all_single(torch.empty(4, 3), torch.empty(4, 3),
                               input_split_sizes=[1, 2])
        raise AssertionError("bad split sizes were accepted")
    except (ValueError, RuntimeError) as error:
        _check("add up to 3 rows" in str(error), str(error))
    dist.barrier()
    dist.destroy_process_group()
    print(f"all_to_all ok rank {rank} of {size}", flush=True)


def _subgroups():
    """Three ranks: groups {0, 2} and {1, 2} and {1} beside the world."""
    import torch
    import torch.distributed as dist
    import torch_porta  # noqa: F401
    import torch_porta.distributed  # noqa: F401

    dist.init_process_group("porta")
    rank, size = dist.get_rank(), dist.get_world_size()
    _check(size == 3, f"run with 3 ranks, given {size}")
    # Every rank creates every group, in the same order (PyTorch's rule).
    even = dist.new_group([0, 2])
    upper = dist.new_group([1, 2])
    alone = dist.new_group([1])
    for device in ("porta:0", "cpu"):
        tensor = torch.full((5,), float(rank + 1), device=device)
        if rank in (0, 2):
            dist.all_reduce(tensor, group=even)
            _check(tensor.cpu().tolist() == [4.0] * 5, f"even group sum on {device}: {tensor}")
            _check(dist.get_rank(even) == [0, 2].index(rank), "rank in the group")
        if rank in (1, 2):
            value = torch.full((2,), float(rank * 10), device=device)
            dist.broadcast(value, src=2, group=upper)  # src is a world rank
            _check(value.cpu().tolist() == [20.0, 20.0], f"upper broadcast on {device}")
            gathered = torch.empty(4, device=device)
            dist.all_gather_into_tensor(gathered, torch.full((2,), float(rank), device=device),
                                        group=upper)
            _check(gathered.cpu().tolist() == [1.0, 1.0, 2.0, 2.0], f"upper gather {gathered}")
            out = torch.empty(2, 3, device=device)
            dist.all_to_all_single(out, torch.full((2, 3), float(rank), device=device),
                                   group=upper)
            _check(out.cpu()[:, 0].tolist() == [1.0, 2.0], f"upper all_to_all {out}")
            if rank == 1:
                dist.send(torch.full((3,), 7.0, device=device), dst=2, group=upper)
            else:
                got = torch.empty(3, device=device)
                dist.recv(got, src=1, group=upper)
                _check(got.cpu().tolist() == [7.0] * 3, f"upper send/recv {got}")
        if rank == 1:
            one = torch.full((3,), 5.0, device=device)
            dist.all_reduce(one, group=alone)
            _check(one.cpu().tolist() == [5.0] * 3, f"group of one: {one}")
        # The world still works between the groups' calls.
        world = torch.full((1,), float(rank), device=device)
        dist.all_reduce(world)
        _check(world.cpu().tolist() == [3.0], f"world after the groups: {world}")
    # A group whose members issue asynchronously while a non-member waits
    # in a world barrier: non-members never take part.
    if rank in (0, 2):
        works = [dist.all_reduce(torch.ones(3), group=even, async_op=True) for _ in range(3)]
        for work in works:
            work.wait()
    dist.barrier()
    for group in (even, upper, alone):
        if group != dist.GroupMember.NON_GROUP_MEMBER:
            dist.destroy_process_group(group)
    dist.destroy_process_group()
    print(f"subgroups ok rank {rank} of {size}", flush=True)


def _subgroup_hang():
    """Group {0, 2}: rank 2 never arrives; rank 0's error names world rank 2."""
    import torch
    import torch.distributed as dist
    import torch_porta  # noqa: F401
    import torch_porta.distributed  # noqa: F401

    dist.init_process_group("porta")
    group = dist.new_group([0, 2])
    dist.barrier()
    rank = dist.get_rank()
    if rank != 0:
        time.sleep(SCENARIO_TIMEOUT)  # never arrives; mpirun ends it
        os._exit(0)
    try:
        dist.all_reduce(torch.ones(4, device="porta"), group=group)
    except RuntimeError as error:
        print(f"timeout error: {error}", flush=True)
        os._exit(3)
    print("all_reduce returned without rank 2", flush=True)
    os._exit(4)


def _hang():
    import torch
    import torch.distributed as dist
    import torch_porta  # noqa: F401
    import torch_porta.distributed  # noqa: F401

    dist.init_process_group("porta")
    dist.barrier()
    if dist.get_rank() == 1:
        time.sleep(SCENARIO_TIMEOUT)  # never arrives; mpirun ends it
        os._exit(0)
    start = time.monotonic()
    # A CPU tensor is reduced in place, so the call returns at once on
    # every device setup (a staged porta tensor would be waited for here).
    work = dist.all_reduce(torch.ones(4), async_op=True)
    issued = time.monotonic() - start
    try:
        work.wait()  # the error of the communication thread, raised here
    except RuntimeError as error:
        print(f"issued in {issued:.3f} s, completed {work.is_completed()}", flush=True)
        print(f"timeout error after {time.monotonic() - start:.2f} s: {error}", flush=True)
        os._exit(3)  # the world is unusable: no finalize
    print("all_reduce returned without rank 1", flush=True)
    os._exit(4)


def _ddp_stopped_rank():
    import torch
    import torch.distributed as dist
    import torch_porta  # noqa: F401
    import torch_porta.distributed  # noqa: F401
    from torch.nn.parallel import DistributedDataParallel

    dist.init_process_group("porta")
    torch.manual_seed(0)
    ddp = DistributedDataParallel(torch.nn.Linear(8, 4).to("porta"))
    dist.barrier()
    if dist.get_rank() == 1:
        print(f"stopping pid {os.getpid()}", flush=True)
        os.kill(os.getpid(), signal.SIGSTOP)  # hung: the test kills it
        os._exit(0)
    try:
        ddp(torch.ones(2, 8, device="porta")).sum().backward()
    except RuntimeError as error:
        print(f"backward error {type(error).__name__}: {error}", flush=True)
        os._exit(3)  # the world is unusable: no finalize
    print("backward returned without rank 1", flush=True)
    os._exit(4)


def _late():
    """Rank 1 starts MPI but never joins porta's world."""
    if os.environ["OMPI_COMM_WORLD_RANK"] == "1":
        import ctypes
        library = ctypes.CDLL("libmpi.so.40", mode=ctypes.RTLD_GLOBAL)
        library.MPI_Init(None, None)
        time.sleep(SCENARIO_TIMEOUT)  # mpirun ends it
        os._exit(0)
    try:
        import torch_porta.distributed  # noqa: F401  (joins the world at import)
    except RuntimeError as error:
        print(f"init error: {error}", flush=True)
        os._exit(3)
    print("init returned without rank 1", flush=True)
    os._exit(4)


def _exit():
    import torch
    import torch.distributed as dist
    import torch_porta  # noqa: F401
    import torch_porta.distributed  # noqa: F401

    dist.init_process_group("porta")
    dist.barrier()
    if dist.get_rank() == 1:
        os._exit(0)  # gone without a word
    dist.all_reduce(torch.ones(4, device="porta"))
    print("collectives ok: all_reduce returned without rank 1", flush=True)


def _torchrun_scenario():
    import torch
    import torch.distributed as dist
    import torch_porta  # noqa: F401
    import torch_porta.distributed  # noqa: F401

    dist.init_process_group("porta")
    tensor = torch.arange(3.0, device="porta")
    dist.all_reduce(tensor)
    _check(tensor.cpu().tolist() == [0.0, 1.0, 2.0], f"all_reduce of one: {tensor}")
    dist.barrier()
    rank, size = dist.get_rank(), dist.get_world_size()
    dist.destroy_process_group()
    print(f"torchrun ok rank {rank} of {size}", flush=True)


if __name__ == "__main__":
    {"collectives": _collectives, "ddp": _ddp, "hang": _hang, "exit": _exit,
     "torchrun": _torchrun_scenario, "checkpoint": _checkpoint, "late": _late,
     "async": _async, "all_to_all": _all_to_all, "subgroups": _subgroups,
     "subgroup_hang": _subgroup_hang, "ddp_stopped_rank": _ddp_stopped_rank}[sys.argv[1]]()
