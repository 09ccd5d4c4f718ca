"""Bad settings in the environment: an integer variable that is not one or
is out of range, a kernel cache path that is a file. Each is said once on
stderr (the variable, the value, what is used instead), the process runs
on (fused mode still compiles its kernels) and leaves no temporary kernel
directory behind."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

# A fused chain: one kernel to compile, and the metrics to tell it was.
PROGRAM = textwrap.dedent("""
    import json, torch, torch_porta
    torch_porta.set_eager_mode("fused")
    x = torch.arange(12, dtype=torch.float32, device="porta")
    y = (x * 2.5 + 1).exp().sum()
    assert abs(float(y) - float((torch.arange(12.) * 2.5 + 1).exp().sum())) < 1e3
    print(json.dumps(torch_porta.metrics()))
""")


def run(tmp_path, **settings):
    """The program in a fresh process with `settings` in its environment and
    its temporary files under tmp_path/tmp; (stderr, metrics)."""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = dict(os.environ, PORTA_VISIBLE_DEVICES="cpu", TMPDIR=str(temporary), **settings)
    done = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    left = [p.name for p in temporary.iterdir() if p.name.startswith("porta-kernels-")]
    assert not left, f"temporary kernel directories left behind: {left}"
    return done.stderr, json.loads(done.stdout.strip().splitlines()[-1])


def lines_with(text, needle):
    return [line for line in text.splitlines() if needle in line]


def blocked_cache(tmp_path, blocked):
    """A cache path where a file stands in the way, or a usable one."""
    cache = tmp_path / "cache"
    if blocked == "cache directory":
        cache.write_text("not a directory")
    elif blocked == "kernels directory":
        cache.mkdir()
        (cache / "kernels").write_text("not a directory")
    return cache


# Each run sets a bad thread count and a cache path (blocked by a file, or
# not): one process checks both warnings.
@pytest.mark.parametrize("threads,problem,blocked", [
    ("abc", "is not an integer", "cache directory"),
    ("0", "is too small", "kernels directory"),
    ("-1", "is too small", None)])
def test_bad_settings_are_said_once_and_leave_nothing_behind(tmp_path, threads, problem,
                                                              blocked):
    cache = blocked_cache(tmp_path, blocked)
    stderr, metrics = run(tmp_path, PORTA_NUM_THREADS=threads, PORTA_CACHE_DIR=str(cache))
    said = lines_with(stderr, "PORTA_NUM_THREADS")
    assert len(said) == 1, stderr
    assert f'PORTA_NUM_THREADS="{threads}" {problem}' in said[0]
    assert "; using " in said[0]
    said = lines_with(stderr, "PORTA_CACHE_DIR")
    if blocked:
        assert len(said) == 1, stderr
        assert f'PORTA_CACHE_DIR="{cache}"' in said[0] and "not a directory" in said[0].lower()
        assert "removed at exit" in said[0]
    else:
        assert not said, stderr
    assert metrics["kernels_compiled"] > 0, metrics  # fused mode still compiles


def test_a_huge_thread_count_is_lowered_with_one_warning(tmp_path):
    env = dict(os.environ, PORTA_NUM_THREADS="99999", PORTA_VISIBLE_DEVICES="cpu")
    check = ("import torch, torch_porta; "
             "print(torch.porta.get_device_properties(0).multi_processor_count)")
    done = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    said = lines_with(done.stderr, "PORTA_NUM_THREADS")
    assert len(said) == 1 and 'PORTA_NUM_THREADS="99999" is too large' in said[0], done.stderr
    limit = int(said[0].rsplit("using ", 1)[1])
    assert 64 <= limit < 99999 and int(done.stdout.split()[-1]) == limit
    porta = os.path.join(os.path.dirname(sys.executable), "porta")
    done = subprocess.run([porta, "devices"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert len(lines_with(done.stderr, 'PORTA_NUM_THREADS="99999" is too large')) == 1
