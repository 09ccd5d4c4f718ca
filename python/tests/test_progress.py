"""Building a large graph's kernels shows a progress line on a terminal
(stderr on a pseudo-terminal) and nothing when stderr is a pipe, unless
PORTA_PROGRESS=1 asks for it."""
import os
import re
import pty
import select
import subprocess
import sys
import textwrap

import pytest

# The line shows only after half a second of building: the test relies on
# that timing, so no neighbouring test shares its cores.
pytestmark = pytest.mark.serial

# Fifteen elementwise chains, each with a unary op of its own and a shape of
# its own: fifteen kernels to compile in a fresh cache, well over the half
# second before the line appears.
PROGRAM = textwrap.dedent("""
    import torch, torch_porta
    torch_porta.set_eager_mode("fused")
    ops = [torch.exp, torch.sin, torch.cos, torch.tanh, torch.sigmoid, torch.atan,
           torch.expm1, torch.log1p, torch.erf, torch.asinh, torch.sinh, torch.cosh,
           torch.rsqrt, torch.reciprocal, torch.sqrt]
    outs = []
    for k, op in enumerate(ops):
        x = torch.rand(k + 2, 3, 5, device="porta") + 0.5
        outs.append((op(x) * (k + 1.5) - 0.25).abs())
    torch_porta.synchronize()
    print(sum(float(o.sum()) for o in outs))
""")

LINE = b"porta: building kernels ["


def run(tmp_path, stderr_is_terminal, progress_env=None):
    # The CPU backend's kernels are compiled C (a fresh cache makes the work
    # long); an OpenCL driver keeps a cache of its own, so its builds may be
    # too quick for the half second the line waits.
    env = dict(os.environ, PORTA_CACHE_DIR=str(tmp_path / "cache"), PORTA_VISIBLE_DEVICES="cpu")
    env.pop("PORTA_PROGRESS", None)
    if progress_env is not None:
        env["PORTA_PROGRESS"] = progress_env
    if not stderr_is_terminal:
        done = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr.decode(errors="replace")
        return done.stderr
    master, terminal = pty.openpty()
    child = subprocess.Popen([sys.executable, "-c", PROGRAM], env=env, stdout=subprocess.PIPE,
                             stderr=terminal)
    os.close(terminal)
    seen = b""
    while True:  # read until the child's end closes the terminal
        ready, _, _ = select.select([master], [], [], 300)
        if not ready:
            child.kill()
            break
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: every writer has gone
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    child.stdout.read()
    assert child.wait(timeout=60) == 0, seen.decode(errors="replace")
    return seen


def test_progress_on_a_terminal(tmp_path):
    seen = run(tmp_path, stderr_is_terminal=True)
    assert LINE in seen, seen.decode(errors="replace")[-2000:]
    assert re.search(rb"\[#+\] (\d+)/\1 ", seen), seen  # the finished line


def test_no_progress_on_a_pipe(tmp_path):
    seen = run(tmp_path, stderr_is_terminal=False)
    assert LINE not in seen and b"\r" not in seen, seen.decode(errors="replace")[-2000:]


def test_progress_forced_on_a_pipe_shows_the_work_is_long_enough(tmp_path):
    # the same work in a fresh cache: long enough that a line is drawn
    seen = run(tmp_path, stderr_is_terminal=False, progress_env="1")
    assert LINE in seen, seen.decode(errors="replace")[-2000:]
