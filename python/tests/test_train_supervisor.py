"""`porta train` (docs/train.md): an unchanged training script
(train_script.py) run under the supervisor, interrupted (a device lost
on PoCL, the process killed, an MPI rank killed), continues from its last
checkpoint and reaches the losses of a run that was never interrupted,
with the same batches. The command is $PORTA_CLI, else build/porta of the
source tree."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLI = os.environ.get("PORTA_CLI", str(ROOT / "build" / "porta"))
SCRIPT = str(Path(__file__).with_name("train_script.py"))
TIMEOUT = 240


def _environment(**extra):
    env = dict(os.environ, PORTA_NUM_THREADS="1", OMP_NUM_THREADS="1")
    for name in ("PORTA_VISIBLE_DEVICES", "PORTA_FAULTS", "RANK", "WORLD_SIZE", "MASTER_ADDR",
                 "MASTER_PORT"):
        env.pop(name, None)
    if os.geteuid() == 0:
        env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})
    # two ranks on a machine of any size, not pinned to cores another test uses
    env.update({"OMPI_MCA_rmaps_base_oversubscribe": "1",
                "OMPI_MCA_hwloc_base_binding_policy": "none"})
    env.update(extra)
    return env


def _train(options, arguments, **env):
    if not os.path.exists(CLI):
        pytest.fail(f"the porta command is not built: {CLI} (set PORTA_CLI)")
    return subprocess.run([CLI, "train", *options, "--", sys.executable, SCRIPT, *arguments],
                          env=_environment(**env), capture_output=True, text=True,
                          timeout=TIMEOUT)


def _direct(arguments, **env):
    done = subprocess.run([sys.executable, SCRIPT, *arguments], env=_environment(**env),
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def _steps(stdout):
    """Per process, in order of appearance: [(loss, batch crc), ...]."""
    runs = {}
    for pid, loss, crc in re.findall(r"^loss (\d+) (\S+) (\d+)$", stdout, re.M):
        runs.setdefault(pid, []).append((float(loss), int(crc)))
    return list(runs.values())


def _final(stdout):
    return [float(value) for value in re.findall(r"^final \d+ (\S+)$", stdout, re.M)]


def _resumed_step(stderr):
    found = re.findall(r"porta train: resumed from the checkpoint of step (\d+)", stderr)
    assert found, stderr
    return int(found[-1])


_references = {}


def _reference(model):
    """The output of an uninterrupted run on the CPU backend (once per
    model: several tests compare with it)."""
    if model not in _references:
        _references[model] = _direct([model, "2"], PORTA_VISIBLE_DEVICES="cpu").stdout
    return _references[model]


def _require_opencl():
    """PoCL (pocl-opencl-icd, installed by the set-up and CI): missing is a
    failure, not a skip."""
    import torch_porta
    backends = [torch_porta._C.compare_device_info(i)[0]
                for i in range(torch_porta.device_count())]
    if "opencl" not in backends:
        pytest.fail(f"no OpenCL device (install pocl-opencl-icd); devices here: {backends}")


@pytest.mark.serial
@pytest.mark.parametrize("model, fault", [("cnn", 6000), ("transformer", 12000)])
def test_a_run_losing_its_opencl_device_continues_on_the_cpu_backend(tmp_path, model, fault):
    """Lost on porta's OpenCL device (PoCL) part-way, the run continues on
    the CPU backend from its last checkpoint: every step after it has the
    loss of a run on the CPU backend throughout (1e-5 relative) and the
    same batch."""
    _require_opencl()
    reference = _steps(_reference(model))[0]
    done = _train(["--devices", "opencl,cpu", "--checkpoint-every", "1", "--checkpoint-dir",
                   str(tmp_path / "ckpt")], [model, "2"],
                  PORTA_FAULTS=f"device_lost:porta:0@{fault}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "attempt 1 lost its device (exit status 75)" in done.stderr, done.stderr
    assert re.search(r"restart 1 of 3: on porta:\d \(cpu", done.stderr), done.stderr
    lost, resumed = _steps(done.stdout)
    step = _resumed_step(done.stderr)
    assert 1 <= step <= len(lost) < len(reference), (step, len(lost), done.stderr)
    assert len(resumed) == len(reference) - step
    for (loss, crc), (expected, expected_crc) in zip(resumed, reference[step:]):
        assert crc == expected_crc
        assert loss == pytest.approx(expected, rel=1e-5)


def _prices(tmp_path, opencl, cpu):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"currency": "USD", "prices": [
        {"label": "OpenCL", "match": {"backend": "opencl"}, "per_hour": opencl},
        {"label": "CPU", "match": {"backend": "cpu"}, "per_hour": cpu}]}))
    return str(path)


@pytest.mark.serial
def test_a_run_moves_to_a_cheaper_device_at_a_checkpoint(tmp_path):
    """--move-when cheaper: the OpenCL device priced far above the CPU
    backend, the run moves after its first checkpoint and continues there
    with the losses of a CPU-backend run (1e-5 relative), same batches."""
    _require_opencl()
    reference = _steps(_reference("cnn"))[0]
    done = _train(["--devices", "opencl,cpu", "--checkpoint-every", "2", "--move-when",
                   "cheaper", "--checkpoint-dir", str(tmp_path / "ckpt")], ["cnn", "2"],
                  PORTA_CACHE_DIR=str(tmp_path / "cache"),
                  PORTA_PRICES=_prices(tmp_path, opencl=50.0, cpu=0.01))
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"--move-when cheaper: moving from porta:\d to porta:\d \(cpu.* after the "
                     r"checkpoint of step \d+: \S+ per million samples there, \S+ here",
                     done.stderr), done.stderr
    assert "restart" not in done.stderr and "attempt 2 on porta:0 (cpu" in done.stderr
    step = _resumed_step(done.stderr)
    moved, resumed = _steps(done.stdout)
    assert step >= 2 and len(resumed) == len(reference) - step
    for (loss, crc), (expected, expected_crc) in zip(resumed, reference[step:]):
        assert crc == expected_crc
        assert loss == pytest.approx(expected, rel=1e-5)


def test_auto_orders_the_devices_by_stored_measurements(tmp_path):
    done = subprocess.run([CLI, "train", "--devices", "auto:cost", "--checkpoint-dir",
                           str(tmp_path / "ckpt"), "--", "true"], capture_output=True, text=True,
                          timeout=120, env=_environment(
                              PORTA_CACHE_DIR=str(tmp_path / "cache"),
                              PORTA_PRICES=_prices(tmp_path, opencl=50.0, cpu=0.01)))
    assert done.returncode == 0, done.stderr
    order = re.search(r"--devices auto:cost, by the stored measurements of the standard "
                      r"workload: porta:(\d) \((\S+) per million samples\)", done.stderr)
    assert order, done.stderr
    assert f"attempt 1 on porta:{order.group(1)} (cpu" in done.stderr


@pytest.mark.serial
def test_a_killed_run_on_the_cpu_backend_continues_bit_for_bit(tmp_path):
    """Killed (SIGKILL) when it receives its 8th batch (the second of the
    second epoch, after an evaluation loop over another DataLoader), the run
    restarts on the same device from the checkpoint of step 7 and every
    later loss, the last evaluation's and the final one are bit-identical
    to the run that was never stopped."""
    reference = _reference("cnn")
    done = _train(["--devices", "cpu", "--checkpoint-every", "1", "--checkpoint-dir",
                   str(tmp_path / "ckpt")], ["cnn", "2"], TRAIN_TEST_KILL_AT="8",
                  TRAIN_TEST_MARKER=str(tmp_path / "killed"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "attempt 1 killed by signal 9" in done.stderr, done.stderr
    assert _resumed_step(done.stderr) == 7
    killed, resumed = _steps(done.stdout)
    expected = _steps(reference)[0]
    assert killed == expected[:7]
    assert resumed == expected[7:]  # floats compared exactly
    evaluations = re.findall(r"^evaluation \d+ (\S+)$", done.stdout, re.M)
    assert evaluations[-1] == re.findall(r"^evaluation \d+ (\S+)$", reference, re.M)[-1]
    assert _final(done.stdout) == _final(reference)


@pytest.mark.serial
def test_checkpoints_by_time_and_a_hung_run_restarts(tmp_path):
    """--checkpoint-seconds takes checkpoints as time passes; a run that
    makes no step for --hang-seconds is stopped, every rank of it, and
    restarted."""
    done = _train(["--devices", "cpu", "--checkpoint-seconds", "0.01",
                   "--checkpoint-dir", str(tmp_path / "ckpt")], ["cnn", "1"])
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(re.findall(r"checkpoint of step \d+ written", done.stderr)) >= 2, done.stderr
    # under mpirun, whose ranks run in process groups of their own
    hang = subprocess.run([CLI, "train", "--devices", "cpu", "--ranks", "2", "--hang-seconds",
                           "0.5", "--max-restarts", "1", "--checkpoint-dir", str(tmp_path / "h"),
                           "--", "sleep", "31.25"], capture_output=True, text=True, timeout=60,
                          env=_environment())
    assert hang.returncode == 1, hang.stderr
    assert "attempt 1 hung (no optimizer step for the --hang-seconds)" in hang.stderr
    assert "giving up: 1 restart allowed" in hang.stderr
    assert not _running(["sleep", "31.25"]), "ranks left running"


def _running(command):
    """The processes whose command line is `command`."""
    wanted = "\0".join(command) + "\0"
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline") as f:
                if f.read() == wanted:
                    found.append(int(entry))
        except (OSError, ValueError):
            continue  # not a process, or one that has just ended
    return found


def _ddp(tmp_path, name, ranks, **env):
    done = _train(["--devices", "cpu", "--ranks", str(ranks), "--checkpoint-every", "1",
                   "--checkpoint-dir", str(tmp_path / name)], ["ddp", "2"], **env)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.mark.serial
def test_a_ddp_run_losing_a_rank_continues_with_one_rank(tmp_path):
    """Rank 1 of 2 killed at its 4th batch: the job restarts with 1 rank
    from the checkpoint of step 3 and ends with the loss a 1-rank
    continuation of that checkpoint gives; a 1-rank checkpoint resumes on
    2 ranks (every rank draws the same batches, so the steps are the
    same)."""
    killed = _ddp(tmp_path, "killed", 2, TRAIN_TEST_KILL_AT="4", TRAIN_TEST_KILL_RANK="1",
                  TRAIN_TEST_MARKER=str(tmp_path / "killed.marker"))
    assert "restart 1 of 3: one rank fewer" in killed.stderr, killed.stderr
    assert "with 1 rank:" in killed.stderr
    assert _resumed_step(killed.stderr) == 3
    _ddp(tmp_path, "alone", 2, TRAIN_TEST_STOP_AT="4")
    continued = _ddp(tmp_path, "alone", 1)
    assert _resumed_step(continued.stderr) == 3
    assert _final(killed.stdout) == _final(continued.stdout)
    _ddp(tmp_path, "grown", 1, TRAIN_TEST_STOP_AT="4")
    grown = _ddp(tmp_path, "grown", 2)
    assert _resumed_step(grown.stderr) == 3
    assert _final(grown.stdout) == pytest.approx(_final(continued.stdout), rel=1e-6)


@pytest.mark.parametrize("arguments, message", [
    ([], "missing '--' and the script's command after it"),
    (["--devices", "cpu", "--"], "missing the script's command after '--'"),
    (["--devices", "nowhere", "--", "true"], "no device 'nowhere'"),
    (["--devices", "porta:99", "--", "true"], "device index 99 is out of range"),
    (["--devices", "auto:speed", "--", "true"], "objective must be one of"),
    (["--checkpoint-every", "0", "--", "true"], "--checkpoint-every expects a count of 1.."),
    (["--checkpoint-seconds", "-1", "--", "true"], "--checkpoint-seconds expects seconds"),
    (["--checkpoint-every", "2", "--checkpoint-seconds", "3", "--", "true"], "exclude each"),
    (["--max-restarts", "x", "--", "true"], "--max-restarts expects a count"),
    (["--ranks", "0", "--", "true"], "--ranks expects a count of 1.."),
    (["--devices"], "--devices needs a value"),
    (["script.py"], "unexpected argument 'script.py'"),
])
def test_bad_usage_is_refused_clearly(arguments, message):
    if not os.path.exists(CLI):
        pytest.fail(f"the porta command is not built: {CLI} (set PORTA_CLI)")
    done = subprocess.run([CLI, "train", *arguments], capture_output=True, text=True,
                          timeout=60, env=_environment())
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert done.stderr.startswith("porta train: ")
