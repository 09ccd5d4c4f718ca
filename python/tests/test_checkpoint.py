"""torch_porta.checkpoint: every state round-trips (training resumed from a
checkpoint continues bit for bit as the run that was never stopped, with
the same batches), tied parameters are stored once and tied again, a
checkpoint saved on one device loads on another, and a damaged, partial or
interrupted checkpoint is refused, naming the file and the tensor, while
the model and the previous checkpoint stay as they were."""
import importlib.util
import json
import os
import pathlib
import random
import shutil

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_porta
from torch_porta.checkpoint import CheckpointError, ResumableSampler

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def _digits_cnn_class():
    """The demo's model, from examples/train_digits_cnn.py."""
    spec = importlib.util.spec_from_file_location("train_digits_cnn",
                                                  EXAMPLES / "train_digits_cnn.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.DigitsCNN


class DemoWithDropout(nn.Module):
    """The demo CNN with dropout on its logits, so the device's generator
    is part of what must be restored."""

    def __init__(self):
        super().__init__()
        self.cnn = _digits_cnn_class()()

    def forward(self, x):
        return F.dropout(self.cnn(x), 0.2, self.training)


class TiedModel(nn.Module):
    def __init__(self, vocabulary=11, width=6):
        super().__init__()
        self.embed = nn.Embedding(vocabulary, width)
        self.mix = nn.Linear(width, width)
        self.head = nn.Linear(width, vocabulary, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, tokens):
        return self.head(torch.tanh(self.mix(self.embed(tokens))))


DEVICE = "porta:0"  # the CPU backend: resumed runs must match bit for bit
SAMPLES, BATCH = 96, 16  # 6 batches an epoch


def _data():
    generator = torch.Generator().manual_seed(5)
    images = torch.rand(SAMPLES, 1, 8, 8, generator=generator)
    labels = torch.randint(0, 10, (SAMPLES,), generator=generator)
    return torch.utils.data.TensorDataset(images, labels)


def _run(seed, device=DEVICE):
    torch.manual_seed(seed)
    model = DemoWithDropout().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
    sampler = ResumableSampler(SAMPLES, generator=torch.Generator().manual_seed(seed))
    loader = torch.utils.data.DataLoader(_data(), batch_size=BATCH, sampler=sampler)
    return model, optimizer, scheduler, loader


def _train(model, optimizer, scheduler, loader, steps, device=DEVICE, after_step=None):
    """`steps` optimizer steps over as many epochs as they need; the losses
    and a record of the batches drawn. after_step(number of steps done)
    runs after each."""
    losses, drawn = [], []
    while len(losses) < steps:
        for images, labels in loader:
            images, labels = images.to(device), labels.to(device)
            loss = F.cross_entropy(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            losses.append(loss.item())
            drawn.append(labels.tolist())
            if after_step is not None:
                after_step(len(losses))
            if len(losses) == steps:
                break
    return losses, drawn


@pytest.mark.parametrize("stop", [5, 6])  # mid-epoch, at the end of an epoch
def test_resumed_training_matches_the_uninterrupted_run(tmp_path, stop):
    total = 14  # the resumed run crosses an epoch's end
    reference = _train(*_run(seed=0), steps=total)

    model, optimizer, scheduler, loader = _run(seed=0)
    first = _train(model, optimizer, scheduler, loader, steps=stop)
    random.seed(123)
    torch_porta.checkpoint.save(tmp_path / "ckpt", model=model, optimizer=optimizer,
                                scheduler=scheduler, step=stop, extra={"note": "mid-epoch"},
                                data=loader)
    python_draw = random.random()
    # everything a resumed process would start with is different
    torch.rand(7), torch.rand(7, device=DEVICE), random.random()
    model, optimizer, scheduler, loader = _run(seed=1)
    state = torch_porta.checkpoint.load(tmp_path / "ckpt", model=model, optimizer=optimizer,
                                        scheduler=scheduler, data=loader)
    assert state == {"step": stop, "extra": {"note": "mid-epoch"}}
    assert loader.sampler.epoch == 0 and loader.sampler.yielded == stop * BATCH
    assert random.random() == python_draw
    rest = _train(model, optimizer, scheduler, loader, steps=total - stop)
    assert first[0] + rest[0] == reference[0]  # losses, bit for bit
    assert first[1] + rest[1] == reference[1]  # the same batches


@pytest.mark.skipif(torch.porta.device_count() < 2,
                    reason="needs two porta devices (e.g. PoCL: pocl-opencl-icd)")
def test_a_job_whose_device_is_lost_continues_on_the_cpu_backend(tmp_path):
    """Training on porta:1 (OpenCL) checkpoints after each step until the
    device is lost (an injected fault); the job resumes from the last
    checkpoint on porta:0 (the CPU backend) and from there has the losses
    and batches of a run that was on the CPU backend throughout."""
    total = 10
    reference = _train(*_run(seed=0), steps=total)
    model, optimizer, scheduler, loader = _run(seed=0, device="porta:1")

    def checkpoint_then_lose_the_device_at_step_4(step):
        torch_porta.checkpoint.save(tmp_path / "ckpt", model=model, optimizer=optimizer,
                                    scheduler=scheduler, step=step, data=loader)
        if step == 4:  # its next allocation or launch fails, and every later one
            torch_porta.set_faults("device_lost:porta:1@1")

    try:
        with pytest.raises(RuntimeError) as lost:
            _train(model, optimizer, scheduler, loader, total, "porta:1",
                   after_step=checkpoint_then_lose_the_device_at_step_4)
    finally:
        torch_porta.set_faults(None)
    assert torch_porta.is_device_lost(lost.value)

    model, optimizer, scheduler, loader = _run(seed=1)
    step = torch_porta.checkpoint.load(tmp_path / "ckpt", model=model, optimizer=optimizer,
                                       scheduler=scheduler, data=loader)["step"]
    assert step == 4
    losses, drawn = _train(model, optimizer, scheduler, loader, total - step)
    assert drawn == reference[1][step:]
    torch.testing.assert_close(losses, reference[0][step:], rtol=1e-5, atol=0)


def test_every_generator_the_scaler_and_extra_state_round_trip(tmp_path):
    numpy = pytest.importorskip("numpy")
    scaler = torch.amp.GradScaler("cpu", init_scale=512.0, growth_interval=7)
    extra = {"tensor": torch.arange(3), "pair": (1, "two"), 3: [None, 2.5, True]}
    numpy.random.seed(3), random.seed(4), torch.manual_seed(5)
    torch_porta.checkpoint.save(tmp_path / "ckpt", scaler=scaler, extra=extra,
                                rng=("torch", "porta", "python", "numpy"))
    draws = (numpy.random.rand(), random.random(), torch.rand(2),
             [torch.rand(2, device=f"porta:{i}").cpu() for i in range(torch.porta.device_count())])
    numpy.random.seed(0), random.seed(0), torch.manual_seed(0)
    restored = torch.amp.GradScaler("cpu")
    state = torch_porta.checkpoint.load(tmp_path / "ckpt", scaler=restored)
    assert restored.state_dict() == scaler.state_dict()
    assert torch.equal(state["extra"]["tensor"], extra["tensor"])
    assert state["extra"]["pair"] == (1, "two") and state["extra"][3] == [None, 2.5, True]
    assert numpy.random.rand() == draws[0] and random.random() == draws[1]
    assert torch.equal(torch.rand(2), draws[2])
    for index, drawn in enumerate(draws[3]):
        assert torch.equal(torch.rand(2, device=f"porta:{index}").cpu(), drawn)


def test_tied_parameters_are_stored_once_and_tied_again(tmp_path):
    torch.manual_seed(0)
    saved = TiedModel()
    torch_porta.checkpoint.save(tmp_path / "ckpt", model=saved, rng=False)
    manifest = json.loads((tmp_path / "ckpt" / "manifest.json").read_text())["manifest"]
    assert manifest["model"]["head.weight"] == manifest["model"]["embed.weight"]
    (record,) = manifest["files"].values()
    assert sorted(record["tensors"]) == ["model.embed.weight", "model.mix.bias",
                                         "model.mix.weight"]
    untied = TiedModel()
    untied.head.weight = nn.Parameter(torch.zeros_like(untied.head.weight))
    torch_porta.checkpoint.load(tmp_path / "ckpt", model=untied)
    assert untied.head.weight is untied.embed.weight
    torch.testing.assert_close(untied.embed.weight, saved.embed.weight, rtol=0, atol=0)


def _devices():
    """Where a checkpoint is saved and where it is loaded: the OpenCL
    device (porta:1) when there is one, the CPU backend, PyTorch's CPU."""
    devices = [f"porta:{i}" for i in range(torch.porta.device_count())][::-1] + ["cpu"]
    return [(a, b) for a in devices[:1] for b in devices[1:]]


@pytest.mark.parametrize("source,target", _devices())
def test_a_checkpoint_loads_on_another_device(tmp_path, source, target):
    torch.manual_seed(0)
    model = TiedModel().to(source)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    tokens = torch.tensor([[1, 2, 3, 4]])
    model(tokens.to(source)).sum().backward()
    optimizer.step()
    torch_porta.checkpoint.save(tmp_path / "ckpt", model=model, optimizer=optimizer, step=1)

    torch.manual_seed(1)
    restored = TiedModel().to(target)
    restored_optimizer = torch.optim.Adam(restored.parameters(), lr=0.1)
    torch_porta.checkpoint.load(tmp_path / "ckpt", model=restored, optimizer=restored_optimizer)
    for (name, a), b in zip(model.state_dict().items(), restored.state_dict().values()):
        assert b.device == torch.device(target), name
        torch.testing.assert_close(b.cpu(), a.cpu(), rtol=0, atol=0)
    state = restored_optimizer.state[restored.mix.weight]
    assert state["exp_avg"].device == torch.device(target)
    torch.testing.assert_close(state["exp_avg"].cpu(),
                               optimizer.state[model.mix.weight]["exp_avg"].cpu())


def test_map_location_moves_the_model_in_place(tmp_path):
    model = TiedModel()
    torch_porta.checkpoint.save(tmp_path / "ckpt", model=model, rng=False)
    restored = TiedModel()
    weight = restored.mix.weight
    torch_porta.checkpoint.load(tmp_path / "ckpt", model=restored, map_location="porta:0")
    assert restored.mix.weight is weight and weight.device == torch.device("porta:0")
    assert restored.head.weight is restored.embed.weight


# ---- damaged, partial and interrupted checkpoints ----


def _small_checkpoint(path):
    """A checkpoint of about 2 KB: a tied model and its Adam state."""
    torch.manual_seed(0)
    model = TiedModel()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    model(torch.tensor([[1, 2]])).sum().backward()
    optimizer.step()
    torch_porta.checkpoint.save(path, model=model, optimizer=optimizer, step=3, rng=False)
    return model, optimizer


def _snapshot(model):
    return {name: value.detach().clone() for name, value in model.state_dict().items()}


def _unchanged(model, snapshot):
    return all(torch.equal(value, snapshot[name]) for name, value in model.state_dict().items())


def _data_file(path):
    (name,) = [n for n in os.listdir(path) if n.endswith(".safetensors")]
    return path / name


def test_every_truncation_of_a_checkpoint_is_refused(tmp_path):
    _small_checkpoint(tmp_path / "good")
    target = TiedModel()
    target_optimizer = torch.optim.Adam(target.parameters(), lr=0.1)
    before = _snapshot(target)
    for file in (_data_file(tmp_path / "good").name, "manifest.json"):
        whole = (tmp_path / "good" / file).read_bytes()
        assert 1000 < len(whole) < 5000
        shutil.copytree(tmp_path / "good", tmp_path / "cut", dirs_exist_ok=True)
        with open(tmp_path / "cut" / file, "r+b") as cut:
            for length in reversed(range(len(whole))):
                cut.truncate(length)
                with pytest.raises(CheckpointError) as refused:
                    torch_porta.checkpoint.load(tmp_path / "cut", model=target,
                                                optimizer=target_optimizer)
                message = str(refused.value)
                assert f"{file}:" in message, (length, message)
                if file != "manifest.json":
                    assert any(part in message
                               for part in ("its header", "tensor '", "its end")), message
        (tmp_path / "cut" / file).write_bytes(whole)
    assert _unchanged(target, before) and not target_optimizer.state
    torch_porta.checkpoint.load(tmp_path / "cut", model=target, optimizer=target_optimizer)
    assert not _unchanged(target, before)


def test_a_flipped_byte_is_refused_naming_the_tensor(tmp_path):
    _small_checkpoint(tmp_path / "good")
    data = _data_file(tmp_path / "good")
    whole = data.read_bytes()
    header_length = int.from_bytes(whole[:8], "little")
    header = json.loads(whole[8:8 + header_length])
    name = "model.mix.weight"
    offset = 8 + header_length + header[name]["data_offsets"][0] + 5
    target = TiedModel()
    before = _snapshot(target)
    for position, needle in ((offset, f"tensor '{name}'"), (40, data.name),
                             (8 + header_length - 3, data.name)):
        damaged = bytearray(whole)
        damaged[position] ^= 0x10
        data.write_bytes(bytes(damaged))
        with pytest.raises(CheckpointError, match="damaged") as refused:
            torch_porta.checkpoint.load(tmp_path / "good", model=target)
        assert needle in str(refused.value)
    manifest = tmp_path / "good" / "manifest.json"
    data.write_bytes(whole)
    text = manifest.read_text()
    manifest.write_text(text.replace('"step": 3', '"step": 4'))
    with pytest.raises(CheckpointError, match="manifest.json: damaged"):
        torch_porta.checkpoint.load(tmp_path / "good", model=target)
    assert _unchanged(target, before)


@pytest.mark.parametrize("rule", ["write:1", "write:2"])  # the data file, the manifest
def test_an_interrupted_save_leaves_the_previous_checkpoint(tmp_path, rule):
    model, optimizer = _small_checkpoint(tmp_path / "ckpt")
    good = _snapshot(model)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(1)
    torch_porta.set_faults(rule)
    try:
        with pytest.raises(RuntimeError, match="No space left on device"):
            torch_porta.checkpoint.save(tmp_path / "ckpt", model=model, optimizer=optimizer,
                                        step=4, rng=False)
    finally:
        torch_porta.set_faults(None)
    restored = TiedModel()
    state = torch_porta.checkpoint.load(tmp_path / "ckpt", model=restored,
                                        optimizer=torch.optim.Adam(restored.parameters()))
    assert state["step"] == 3 and _unchanged(restored, good)
    # the next save completes and leaves one data file
    torch_porta.checkpoint.save(tmp_path / "ckpt", model=model, step=4, rng=False)
    assert len([n for n in os.listdir(tmp_path / "ckpt") if n.startswith("state-")]) == 1
    assert torch_porta.checkpoint.load(tmp_path / "ckpt", model=restored)["step"] == 4


def test_a_model_that_does_not_match_is_refused_unchanged(tmp_path):
    _small_checkpoint(tmp_path / "ckpt")
    other = TiedModel(width=5)
    before = _snapshot(other)
    with pytest.raises(CheckpointError, match=r"model.embed.weight.*\[11, 6\].*\[11, 5\]"):
        torch_porta.checkpoint.load(tmp_path / "ckpt", model=other)
    assert _unchanged(other, before)


def test_a_data_position_of_other_data_is_refused_unchanged(tmp_path):
    model, optimizer, scheduler, loader = _run(seed=0)
    torch_porta.checkpoint.save(tmp_path / "ckpt", model=model, data=loader)
    restored = DemoWithDropout().to(DEVICE)
    before = _snapshot(restored)
    with pytest.raises(CheckpointError, match=f"position is of {SAMPLES} indices.*has 10"):
        torch_porta.checkpoint.load(tmp_path / "ckpt", model=restored,
                                    data=ResumableSampler(10))
    assert _unchanged(restored, before)


def test_a_file_in_place_of_the_directory_is_refused(tmp_path):
    (tmp_path / "file").write_bytes(b"something else")
    with pytest.raises(NotADirectoryError, match="expected a checkpoint directory"):
        torch_porta.checkpoint.save(tmp_path / "file", model=TiedModel())
    with pytest.raises(CheckpointError, match="expected a checkpoint directory"):
        torch_porta.checkpoint.load(tmp_path / "file", model=TiedModel())
    assert (tmp_path / "file").read_bytes() == b"something else"


def test_state_that_json_cannot_hold_is_refused():
    with pytest.raises(TypeError, match="extra.when: a value of type object cannot be stored"):
        torch_porta.checkpoint.save("unused", extra={"when": object()})
