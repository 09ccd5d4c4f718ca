"""Device loss: the error a device that has gone away raises (a failed GPU,
a preempted instance; PORTA_FAULTS=device_lost:porta:D@N simulates one,
docs/faults.md). Every later use of the device fails the same way, so a
job catches it, and continues elsewhere from its last checkpoint
(torch_porta.checkpoint) or moves what it can (torch_porta.migrate)."""
import torch

# libporta's PORTA_ERR_DEVICE_LOST messages say this after the device's name
MARK = "device lost:"

# aten ops on a lost device raise torch.AcceleratorError, as CUDA devices'
# failures do (a RuntimeError; older PyTorch has no such class)
_ACCELERATOR_ERROR = getattr(torch, "AcceleratorError", RuntimeError)


class DeviceLostError(_ACCELERATOR_ERROR):
    """Raised by torch_porta's own calls (torch_porta.synchronize) when
    libporta reports device loss. Aten ops raise torch.AcceleratorError
    with the same message: test any error with is_device_lost."""


def is_device_lost(error):
    """True when `error` reports a lost porta device."""
    return isinstance(error, DeviceLostError) or (
        isinstance(error, RuntimeError) and MARK in str(error))
