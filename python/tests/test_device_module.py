"""torch.porta is a device module with torch.cuda's API: devices, streams and
events, random number generators, memory statistics and properties; and
PyTorch's device-generic APIs (torch.accelerator, torch.Generator) know
porta."""
import pytest
import torch

import torch_porta  # noqa: F401  (registers the device)

DEVICE = "porta"
MODULE = torch.porta


@pytest.fixture(autouse=True)
def current_device_restored():
    """A test that changes the current device gives it back as it found it."""
    before = MODULE.current_device()
    yield
    if MODULE.current_device() != before:
        MODULE.set_device(before)


# ---- devices ----

def test_availability_and_device_count():
    assert MODULE.is_available() is True
    count = MODULE.device_count()
    assert isinstance(count, int) and count >= 1


def test_current_device_defaults_to_0_and_set_device_takes_its_forms():
    assert MODULE.current_device() == 0
    for form in (0, f"{DEVICE}:0", torch.device(DEVICE, 0)):
        MODULE.set_device(form)
        assert MODULE.current_device() == 0
        assert torch.empty(2, device=DEVICE).device == torch.device(DEVICE, 0)


def test_the_device_context_restores_the_current_device():
    with MODULE.device(0):
        assert MODULE.current_device() == 0
        assert torch.empty(2, device=DEVICE).device == torch.device(DEVICE, 0)
    with MODULE.device(None):  # as torch.cuda.device(None): nothing changes
        assert MODULE.current_device() == 0
    assert MODULE.current_device() == 0


def test_a_missing_device_is_a_clear_error():
    missing = MODULE.device_count() + 3
    with pytest.raises(IndexError, match=f"{DEVICE}:{missing} does not exist"):
        MODULE.set_device(missing)
    assert MODULE.current_device() == 0


def test_synchronize_takes_no_device_an_index_or_a_device():
    x = torch.ones(100, device=DEVICE) * 3
    MODULE.synchronize()
    MODULE.synchronize(0)
    MODULE.synchronize(torch.device(DEVICE, 0))
    assert x.sum().item() == 300.0


def test_device_name_and_properties():
    name = MODULE.get_device_name()
    assert isinstance(name, str) and name
    assert MODULE.get_device_name(0) == MODULE.get_device_name(f"{DEVICE}:0") == name
    properties = MODULE.get_device_properties(0)
    assert properties.name == name
    assert isinstance(properties.total_memory, int) and properties.total_memory > 0
    assert MODULE.get_device_properties(torch.device(DEVICE, 0)).name == name


def test_amp_supported_dtypes():
    supported = MODULE.get_amp_supported_dtype()
    assert torch.float16 in supported and torch.bfloat16 in supported


def test_torch_accelerator_is_porta():
    assert torch.accelerator.is_available()
    assert torch.accelerator.current_accelerator() == torch.device(DEVICE)
    assert torch.accelerator.current_accelerator().type == DEVICE
    assert torch.accelerator.device_count() == MODULE.device_count()
    assert torch.accelerator.current_device_index() == 0
    torch.accelerator.synchronize()


# ---- streams and events ----

def test_streams_run_work_and_wait_for_each_other():
    x = torch.arange(1000.0, device=DEVICE)
    default = MODULE.current_stream()
    side = MODULE.Stream()
    assert side.device == torch.device(DEVICE, 0)
    assert side != default
    side.wait_stream(default)  # x is written on the default stream
    with MODULE.stream(side):
        assert MODULE.current_stream() == side
        y = x * 2
    assert MODULE.current_stream() == default
    default.wait_stream(side)
    assert torch.equal(y.cpu(), torch.arange(1000.0) * 2)
    side.synchronize()
    assert side.query() is True


def test_events_record_synchronize_query_and_time():
    start = MODULE.Event(enable_timing=True)
    end = MODULE.Event(enable_timing=True)
    start.record()
    x = torch.randn(64, 64, device=DEVICE)
    y = x @ x
    end.record()
    end.synchronize()
    assert end.query() is True
    elapsed = start.elapsed_time(end)
    assert isinstance(elapsed, float) and elapsed >= 0.0
    assert y.shape == (64, 64)
    side = MODULE.Stream()
    marker = MODULE.Event()
    marker.record(MODULE.current_stream())
    side.wait_event(marker)
    marker.wait(side)
    side.synchronize()


# ---- random number generators ----

def test_manual_seed_makes_draws_repeatable():
    MODULE.manual_seed(3)
    first = torch.rand(8, device=DEVICE)
    MODULE.manual_seed(3)
    assert torch.equal(torch.rand(8, device=DEVICE).cpu(), first.cpu())
    MODULE.manual_seed_all(4)
    second = torch.randn(8, device=DEVICE)
    MODULE.manual_seed_all(4)
    assert torch.equal(torch.randn(8, device=DEVICE).cpu(), second.cpu())
    assert not torch.equal(first.cpu(), torch.rand(8, device=DEVICE).cpu())


def test_restoring_the_rng_state_reproduces_draws():
    MODULE.manual_seed(11)
    torch.rand(5, device=DEVICE)  # the state is mid-sequence, not just a seed
    state = MODULE.get_rng_state()
    expected = torch.rand(7, device=DEVICE).cpu()
    MODULE.set_rng_state(state)
    assert torch.equal(torch.rand(7, device=DEVICE).cpu(), expected)
    states = MODULE.get_rng_state_all()
    assert len(states) == MODULE.device_count()
    expected = torch.rand(7, device=DEVICE).cpu()
    MODULE.set_rng_state_all(states)
    assert torch.equal(torch.rand(7, device=DEVICE).cpu(), expected)


def test_a_porta_generator_is_reproducible_and_independent_of_the_default():
    generator = torch.Generator(DEVICE)
    assert generator.device == torch.device(DEVICE, 0)
    generator.manual_seed(7)
    assert generator.initial_seed() == 7
    first = torch.rand(6, generator=generator, device=DEVICE)
    assert first.device == torch.device(DEVICE, 0)

    # draws from the default generator leave this one where it was
    generator.manual_seed(7)
    MODULE.manual_seed(1)
    torch.rand(100, device=DEVICE)
    assert torch.equal(torch.rand(6, generator=generator, device=DEVICE).cpu(), first.cpu())

    # and draws from this one leave the default where it was
    MODULE.manual_seed(1)
    expected_default = torch.rand(6, device=DEVICE).cpu()
    MODULE.manual_seed(1)
    torch.rand(100, generator=generator, device=DEVICE)
    assert torch.equal(torch.rand(6, device=DEVICE).cpu(), expected_default)

    # its state saves and restores like the default's
    state = generator.get_state()
    expected = torch.randn(6, generator=generator, device=DEVICE).cpu()
    generator.set_state(state)
    assert torch.equal(torch.randn(6, generator=generator, device=DEVICE).cpu(), expected)


def test_a_cpu_generator_is_refused_for_porta_draws():
    with pytest.raises(RuntimeError, match="Expected a 'porta' device type for generator"):
        torch.rand(3, device=DEVICE, generator=torch.Generator().manual_seed(0))


# ---- memory statistics ----

def test_memory_statistics_follow_allocations():
    MODULE.synchronize()
    before = MODULE.memory_allocated()
    block = torch.empty(1 << 20, dtype=torch.uint8, device=DEVICE)
    during = MODULE.memory_allocated()
    assert during - before >= 1 << 20
    assert MODULE.memory_allocated(0) == MODULE.memory_allocated(f"{DEVICE}:0") == during
    assert MODULE.max_memory_allocated() >= during
    assert MODULE.memory_reserved() >= during
    del block
    assert MODULE.memory_allocated() == before
    MODULE.reset_peak_memory_stats()
    assert MODULE.max_memory_allocated() == MODULE.memory_allocated()
    MODULE.empty_cache()
    assert MODULE.memory_reserved() >= MODULE.memory_allocated()


def test_memory_summary_is_text():
    summary = MODULE.memory_summary()
    assert isinstance(summary, str) and summary
    assert isinstance(MODULE.memory_summary(0), str)
