"""What the README says of torch.save today: a porta tensor cannot be saved
directly yet, and a state dict moved to the CPU first round-trips."""
import io

import pytest
import torch
import torch_porta  # noqa: F401  (registers the device)


def test_saving_a_porta_tensor_raises_not_implemented():
    with pytest.raises(NotImplementedError, match="set_.source_Storage"):
        torch.save(torch.ones(3).to("porta"), io.BytesIO())


def test_a_state_dict_moved_to_the_cpu_round_trips():
    model = torch.nn.Linear(2, 2).to("porta")
    buffer = io.BytesIO()
    torch.save({k: v.cpu() for k, v in model.state_dict().items()}, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer)
    for name, value in model.state_dict().items():
        assert torch.equal(loaded[name], value.cpu())
