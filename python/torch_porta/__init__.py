"""torch_porta: the PyTorch device "porta", computed by libporta.

    import torch, torch_porta
    x = torch.ones(3, device="porta")
"""
import torch

# PyTorch's PrivateUse1 backend becomes "porta" (tensor.porta(), "porta:1",
# torch.porta) before the native backend (python/native/) registers its
# device guard, hooks, allocator and kernels, which importing _C does.
torch.utils.rename_privateuse1_backend("porta")
torch.utils.generate_methods_for_privateuse1_backend(for_storage=True)

from . import _C, _device_module, _printing  # noqa: E402

torch._register_device_module("porta", _device_module)

from . import kernels  # noqa: E402  (the glue kernels written in Python)
from . import _fallback  # noqa: E402

_fallback.install()

_printing.install()

from ._device_module import (  # noqa: E402
    current_device, device_count, get_device_name, is_available, max_memory_allocated,
    memory_allocated, reset_peak_memory_stats, synchronize)
from ._metrics import metrics, reset_metrics  # noqa: E402
from ._modes import get_eager_mode, set_eager_mode  # noqa: E402
from ._explain import explain  # noqa: E402
from .profiler import profile  # noqa: E402
from . import _compile  # noqa: E402

_compile.install()  # torch.compile(..., backend="porta"), and the default backend on porta
from ._device_module import (  # noqa: E402
    get_rng_state, get_rng_state_all, initial_seed, manual_seed, manual_seed_all, seed,
    seed_all, set_rng_state, set_rng_state_all)

__all__ = ["current_device", "device_count", "get_device_name", "is_available",
           "max_memory_allocated", "memory_allocated", "reset_peak_memory_stats",
           "synchronize", "metrics", "reset_metrics", "get_eager_mode", "set_eager_mode", "explain",
           "get_rng_state", "get_rng_state_all", "initial_seed", "manual_seed", "manual_seed_all",
           "seed", "seed_all", "set_rng_state", "set_rng_state_all"]

from ._select import select_device, resolve_device  # noqa: E402,F401  ("porta:auto")
__all__ += ["select_device", "resolve_device"]

from ._C import set_faults  # noqa: E402  (fault injection for tests: docs/faults.md)
from ._device_lost import DeviceLostError, is_device_lost  # noqa: E402
__all__ += ["set_faults", "DeviceLostError", "is_device_lost"]

from . import distributed  # noqa: E402,F401  (registers the torch.distributed backend "porta")

from .export import export  # noqa: E402  (torch_porta.export(model, inputs, "m.porta"))
from .export_lm import export_causal_lm  # noqa: E402  (a causal LM with its KV cache)
from ._model import load  # noqa: E402  (torch_porta.load("m.porta") -> a callable model)
from . import checkpoint  # noqa: E402,F401  (training checkpoints: docs/checkpoint.md)
from ._migrate import migrate  # noqa: E402  (a training job's state onto another device)

import os as _os  # noqa: E402

if _os.environ.get("PORTA_TRAIN_CHECKPOINT_DIR"):  # run by `porta train` (docs/train.md)
    from . import _train_agent  # noqa: E402
    _train_agent.install()
