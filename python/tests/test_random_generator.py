"""The porta generators: seeding through torch and torch.porta, state save and
restore with torch.cuda's conventions."""
import pytest
import torch

import torch_porta  # noqa: F401


def test_torch_manual_seed_seeds_porta():
    torch.manual_seed(1234)
    assert torch.porta.initial_seed() == 1234
    torch.porta.manual_seed(99)
    assert torch.porta.initial_seed() == 99


def test_negative_seed_wraps_like_torch():
    torch.manual_seed(-1)
    assert torch.porta.initial_seed() == torch.initial_seed() == 2**64 - 1


def test_seed_picks_a_fresh_random_seed():
    torch.porta.manual_seed(1)
    torch.porta.seed()
    first = torch.porta.initial_seed()
    torch.seed()
    assert torch.porta.initial_seed() != first


def test_rng_state_is_16_bytes_seed_then_offset():
    torch.porta.manual_seed(0x0102030405060708)
    state = torch.porta.get_rng_state()
    assert state.dtype == torch.uint8 and state.device.type == "cpu"
    assert state.tolist() == [8, 7, 6, 5, 4, 3, 2, 1] + [0] * 8
    states = torch.porta.get_rng_state_all()  # one per device; manual_seed sets the current one
    assert len(states) == torch.porta.device_count() and states[0].tolist() == state.tolist()


def test_set_rng_state_restores():
    torch.porta.manual_seed(7)
    saved = torch.porta.get_rng_state()
    torch.porta.manual_seed(8)
    torch.porta.set_rng_state(saved)
    assert torch.porta.initial_seed() == 7
    torch.porta.set_rng_state_all([saved] * torch.porta.device_count())
    assert torch.porta.get_rng_state().tolist() == saved.tolist()


def test_set_rng_state_rejects_other_layouts():
    with pytest.raises(RuntimeError, match="16 bytes"):
        torch.porta.set_rng_state(torch.zeros(8, dtype=torch.uint8))
    with pytest.raises(RuntimeError, match="16 bytes"):
        torch.porta.set_rng_state(torch.zeros(16, dtype=torch.int64))


def test_missing_device_is_rejected():
    with pytest.raises(IndexError, match="porta:5 does not exist"):
        torch.porta.manual_seed(1, device=5)


def test_torch_porta_exports_the_generator_functions():
    import torch_porta
    torch_porta.manual_seed(11)
    assert torch_porta.initial_seed() == torch.porta.initial_seed() == 11
    assert torch_porta.get_rng_state().tolist() == torch.porta.get_rng_state().tolist()
