"""torch_porta.load: a model saved as a .porta file (torch_porta.export) or a
.pt2 archive (torch.export.save), run by libporta's C interpreter — the same
code path as the `porta run` command, with no PyTorch graph involved.

    model = torch_porta.load("model.porta")
    y = model(x)            # x on the CPU or on porta; y as torch tensors
"""
import torch

from . import _C, _dtypes, _tensors


class PortaModel:
    """A loaded model. Calling it runs the graph on one porta device: the
    device of the first porta input, else `device` given to load (porta:0
    by default). Outputs are on that device when any input was on porta,
    else on the CPU, like the inputs. One output is returned as a tensor,
    several as a tuple."""

    def __init__(self, path, device=None):
        self._handle = _C.model_load(str(path))
        info = _C.model_info(self._handle)
        self.path = str(path)
        self.format = info["format"]
        self.input_names = [name for name, _, _ in info["inputs"]]
        self.input_dtypes = [_dtypes.to_torch(code) for _, code, _ in info["inputs"]]
        self.input_shapes = [sizes for _, _, sizes in info["inputs"]]
        self.output_names = info["outputs"]
        self.parameter_count = info["parameters"]
        self.device_index = _tensors.device_index(device)

    def __repr__(self):
        return (f"PortaModel({self.path!r}, {self.format}, inputs={self.input_names}, "
                f"outputs={self.output_names})")

    def __call__(self, *inputs):
        if len(inputs) != len(self.input_names):
            raise TypeError(f"the model takes {len(self.input_names)} inputs "
                            f"({', '.join(self.input_names)}), got {len(inputs)}")
        on_porta = [t for t in inputs if _tensors.is_porta(t)]
        index = (on_porta[0].device.index or 0) if on_porta else self.device_index
        device = torch.device("porta", index)
        views = []
        for name, t in zip(self.input_names, inputs):
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"input {name}: expected a tensor, got {type(t).__name__}")
            views.append(_tensors.unwrap(t.to(device)))
        outputs = [_tensors.wrap(payload) for payload in _C.model_run(self._handle, index, views)]
        if not on_porta:
            outputs = [t.cpu() for t in outputs]
        return outputs[0] if len(outputs) == 1 else tuple(outputs)


def load(path, device=None):
    """Loads a .porta file or a .pt2 archive; returns a callable PortaModel."""
    return PortaModel(path, device)
