"""Views share their base's porta buffer, with PyTorch's strides."""
import torch

VIEWS = {
    "view": lambda t: t.view(6, 4),
    "reshape": lambda t: t.reshape(2, 12),
    "t": lambda t: t.t(),
    "transpose": lambda t: t.transpose(0, 1),
    "permute": lambda t: t.permute(1, 0),
    "slice": lambda t: t[1:, ::2],
    "select": lambda t: t[2],
    "column": lambda t: t[:, 3],
    "unsqueeze": lambda t: t.unsqueeze(1),
    "squeeze": lambda t: t.unsqueeze(0).squeeze(0),
    "expand": lambda t: t[:, :1].expand(4, 6),
    "as_strided": lambda t: t.as_strided((3, 2), (2, 5), 1),
    "detach": lambda t: t.detach(),
    "chain": lambda t: t.t()[1:5].transpose(0, 1)[::2],
}


def test_views_match_cpu_layout_and_values():
    cpu = torch.arange(24.0).reshape(4, 6)
    porta = cpu.to("porta")
    for name, make in VIEWS.items():
        expected, got = make(cpu), make(porta)
        assert got.shape == expected.shape, name
        assert got.stride() == expected.stride(), name
        assert got.storage_offset() == expected.storage_offset(), name
        assert torch.equal(got.cpu(), expected), name


def test_writes_through_views_show_in_base():
    cpu = torch.arange(24.0).reshape(4, 6)
    porta = cpu.to("porta")
    for target in (lambda t: t[1], lambda t: t[:, 2], lambda t: t.t()[3:, 1:3]):
        target(cpu).fill_(-1)
        target(porta).fill_(-1)
    porta[0].zero_()
    cpu[0].zero_()
    porta.view(24)[5:7].add_(100)
    cpu.view(24)[5:7].add_(100)
    assert torch.equal(porta.cpu(), cpu)


def test_views_share_storage():
    base = torch.zeros(3, 4, device="porta")
    assert base[1].untyped_storage().data_ptr() == base.untyped_storage().data_ptr()
    assert base.t()._base is base


def test_contiguous_copies_a_transposed_view():
    base = torch.arange(6.0).reshape(2, 3).to("porta")
    c = base.t().contiguous()
    assert c.stride() == (2, 1)
    assert torch.equal(c.cpu(), torch.arange(6.0).reshape(2, 3).t())
