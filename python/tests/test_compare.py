"""python -m torch_porta.compare: the demo CNN's training script compared
on the CPU backend and PoCL's OpenCL device, its JSON and table, and its
HTML report rendered by headless Chromium (plots present with their data
points, a screenshot that is not blank); the energy reader's binding on a
synthetic powercap tree."""
import json
import os
import shutil
import struct
import subprocess
import sys
import zlib

import pytest

import torch_porta
from torch_porta.compare import compare_report

# Runs the whole demo on every device and measures its time and energy:
# numbers a neighbouring test would disturb.
pytestmark = pytest.mark.serial

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEMO = os.path.join(ROOT, "examples", "train_digits_cnn.py")
PRICES = os.path.join(ROOT, "examples", "prices.json")
STEPS, WARMUP = 4, 2


def _opencl_reason():
    out = subprocess.run([sys.executable, "-c", "import torch_porta; "
                          "print(torch_porta.device_count())"],
                         env=dict(os.environ, PORTA_VISIBLE_DEVICES="opencl"),
                         capture_output=True, text=True)
    return None if out.returncode == 0 and out.stdout.strip() not in ("", "0") else out.stderr


@pytest.fixture(scope="module")
def comparison(tmp_path_factory):
    reason = _opencl_reason()
    assert reason is None, (
        "this test compares the CPU backend with an OpenCL device: install PoCL "
        f"(Debian: ocl-icd-libopencl1 pocl-opencl-icd); {reason}")
    out = tmp_path_factory.mktemp("compare")
    paths = {"json": str(out / "compare.json"), "html": str(out / "compare.html")}
    done = subprocess.run(
        [sys.executable, "-m", "torch_porta.compare", "--devices", "cpu,opencl",
         "--steps", str(STEPS), "--warmup", str(WARMUP), "--prices", PRICES,
         "--json", paths["json"], "--html", paths["html"], DEMO],
        capture_output=True, text=True, timeout=900, cwd=str(out),
        env={k: v for k, v in os.environ.items() if k != "PORTA_PROGRESS"})
    assert done.returncode == 0, done.stdout + done.stderr
    paths["table"] = done.stdout
    paths["stderr"] = done.stderr
    with open(paths["json"]) as f:
        paths["report"] = json.load(f)
    return paths


def test_demo_compared_on_cpu_and_opencl(comparison):
    report = comparison["report"]
    assert report["format"] == "porta-compare" and report["version"] == 1
    assert report["workload"] == "train_digits_cnn.py" and report["currency"] == "USD"
    devices = {d["device"]: d for d in report["devices"]}
    assert set(devices) == {"cpu", "opencl"}
    for label, d in devices.items():
        assert d["error"] is None and d["backend"] == label
        assert d["steps"] == STEPS and len(d["step_seconds"]) == STEPS
        assert d["samples_per_step"] == 64            # the demo's batch, seen by the model
        total = sum(d["step_seconds"])
        assert d["samples_per_second"] == pytest.approx(STEPS * 64 / total)
        assert 0 < d["latency_ms"]["p50"] <= d["latency_ms"]["p99"] <= 1e3 * max(d["step_seconds"])
        assert d["peak_memory_bytes"] > 0
        energy = d["energy"]
        if energy["joules"] is None:                  # a reason, never an estimate
            assert energy["unavailable"] and energy["joules_per_step"] is None
        else:
            assert energy["source"] == "rapl" and "shared" in energy["note"]
            assert energy["joules_per_step"] == pytest.approx(energy["joules"] / STEPS)
        # examples/prices.json: 0.096 USD/hour for both on this machine.
        assert d["cost"]["price_per_hour"] == pytest.approx(0.096)
        assert d["cost"]["per_million_samples"] == pytest.approx(
            0.096 / 3600 / d["samples_per_second"] * 1e6)
    table = comparison["table"]
    assert "USD/1M samples" in table and "pthread" in devices["opencl"]["name"]
    for d in devices.values():
        assert f"{d['samples_per_second']:.1f}" in table


def test_progress_only_on_a_terminal_or_when_asked(comparison, tmp_path):
    # stderr was a pipe in the fixture: no progress lines
    assert "compare: cpu" not in comparison["stderr"]
    done = subprocess.run(
        [sys.executable, "-m", "torch_porta.compare", "--devices", "cpu", "--steps", "2",
         "--warmup", "1", DEMO], capture_output=True, text=True, timeout=600, cwd=str(tmp_path),
        env=dict(os.environ, PORTA_PROGRESS="1"))
    assert done.returncode == 0, done.stderr
    assert "compare: cpu (1/1) ..." in done.stderr


def test_report_rendering_is_libportas():
    """The same JSON in gives the same figures out, and bad input is named."""
    results = json.dumps({"format": "porta-compare", "version": 1, "workload": "w",
                          "devices": [{"device": "porta:0", "backend": "cpu", "name": "x",
                                       "step_seconds": [0.5, 0.5], "samples_per_step": 8}]})
    derived = json.loads(compare_report(results, "json"))["devices"][0]
    assert derived["samples_per_second"] == 16 and derived["latency_ms"]["p50"] == 500
    assert derived["energy"]["unavailable"] == "not measured"
    with pytest.raises(ValueError, match="must be json, table or html"):
        compare_report(results, "pdf")
    with pytest.raises(Exception, match="expected \"format\": \"porta-compare\""):
        compare_report("{}", "table")


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("headless Chromium is required for the HTML report test: "
                "apt-get install -y chromium (Debian)")


def _png_pixels(data):
    """(width, height, rows of RGB(A) bytes) of an 8-bit RGB or RGBA PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    width, height, depth, color, _, _, interlace = header
    assert depth == 8 and color in (2, 6) and interlace == 0, header
    channels = 3 if color == 2 else 4
    raw, stride = zlib.decompress(idat), width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        row = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = row[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                row[i] = (row[i] + left) & 255
            elif kind == 2:
                row[i] = (row[i] + up) & 255
            elif kind == 3:
                row[i] = (row[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                row[i] = (row[i] + (left if pa <= pb and pa <= pc else up if pb <= pc
                                    else corner)) & 255
        rows.append(bytes(row))
        previous = row
    return width, height, channels, rows


def test_html_report_renders_in_headless_chromium(comparison, tmp_path):
    chromium = _chromium()
    url = "file://" + comparison["html"]
    flags = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,1400"]
    dom = subprocess.run(flags + ["--dump-dom", url], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr
    html = dom.stdout
    # Four plots; bars and points carry the device and value they draw.
    assert html.count('<svg class="plot"') == 4
    for plot in ("throughput", "throughput-cost", "energy", "latency"):
        assert f'id="{plot}"' in html
    devices = comparison["report"]["devices"]
    for d in devices:
        assert f'class="bar" data-device="{d["device"]}" data-value="' \
               f'{d["samples_per_second"]:.6g}"' in html
    # One point per device on throughput-vs-cost, one per step on latency.
    assert html.count('<circle class="point"') == len(devices) * (1 + STEPS)
    measured = [d for d in devices if d["energy"]["joules"] is not None]
    assert html.count("not measurable</text>") == len(devices) - len(measured)
    assert "<script" not in html

    shot = tmp_path / "report.png"
    done = subprocess.run(flags + [f"--screenshot={shot}", url], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and shot.exists(), done.stderr
    width, height, channels, rows = _png_pixels(shot.read_bytes())
    assert (width, height) == (1400, 1400)
    colored = 0        # pixels of the plots' fills: far from white and grey
    for row in rows:
        for x in range(0, width * channels, channels):
            r, g, b = row[x], row[x + 1], row[x + 2]
            if max(r, g, b) - min(r, g, b) > 80:
                colored += 1
    # Two throughput bars alone are ~2 x 190 x 210 pixels of blue and red.
    assert colored > 20000, f"only {colored} colored pixels: the plots did not render"


def test_energy_binding_on_a_synthetic_powercap_tree(tmp_path, monkeypatch):
    def write(domain, energy, top):
        (tmp_path / domain).mkdir(exist_ok=True)
        (tmp_path / domain / "energy_uj").write_text(f"{energy}\n")
        (tmp_path / domain / "max_energy_range_uj").write_text(f"{top}\n")

    write("intel-rapl:0", 900_000, 1_000_000)
    write("intel-rapl:1", 10, 1_000_000)
    monkeypatch.setenv("PORTA_POWERCAP_ROOT", str(tmp_path))
    # The CPU backend, or PoCL's CPU device where PORTA_VISIBLE_DEVICES
    # hides the CPU backend: both read the processor's RAPL packages.
    samples = [torch_porta._C.energy_sample(i) for i in range(torch_porta.device_count())]
    rapl = [i for i, sample in enumerate(samples) if sample["source"] == "rapl"]
    assert rapl, f"no device reads the synthetic RAPL tree: {samples}"
    index = rapl[0]
    start = torch_porta._C.energy_sample(index)
    assert start["source"] == "rapl" and start["values"] == [900_000, 10]
    write("intel-rapl:0", 100_000, 1_000_000)          # wrapped
    write("intel-rapl:1", 2_000_010, 1_000_000_000)
    end = torch_porta._C.energy_sample(index)
    with pytest.raises(ValueError, match="cannot be compared"):
        torch_porta._C.energy_joules(start, end)       # a counter's range changed
    write("intel-rapl:1", 2_000_010, 1_000_000)
    end = torch_porta._C.energy_sample(index)
    assert torch_porta._C.energy_joules(start, end) == pytest.approx(0.2 + 2.0)
    monkeypatch.setenv("PORTA_POWERCAP_ROOT", str(tmp_path / "absent"))
    none = torch_porta._C.energy_sample(index)
    assert none["source"] is None and "no powercap interface" in none["reason"]
