"""torch_porta.migrate: a training job's state moves to another device in
one call, in place, so the optimizer, the training loop and anything else
holding the model's Parameters keep working with them.

Module.to() is not enough: it may replace a Parameter by a new one (which
the optimizer would not know), it leaves the optimizer's state behind, and
the random numbers of the next step (dropout) would come from the target
device's generator, not from where the source device's had got to.
"""
import torch

from . import _device_module


def _unique_parameters(model, optimizer):
    """Each Parameter once (tied ones are one object), the model's first,
    then any the optimizer holds that the model does not."""
    seen, parameters = set(), []
    sources = [model.parameters()] if model is not None else []
    if optimizer is not None:
        sources += [group["params"] for group in optimizer.param_groups]
    for source in sources:
        for parameter in source:
            if id(parameter) not in seen:
                seen.add(id(parameter))
                parameters.append(parameter)
    return parameters


def _source_device(parameters, model):
    devices = {p.device for p in parameters}
    if model is not None:
        devices |= {b.device for b in model.buffers()}
    if len(devices) > 1:
        raise ValueError("migrate: expected the model and optimizer on one device, found "
                         + ", ".join(sorted(str(d) for d in devices)))
    return devices.pop() if devices else None


def _move_rng(source, target):
    """The source porta device's generator state becomes the target's, so
    the random numbers the next step draws are the ones it would have drawn
    without moving. PyTorch's CPU generator is another algorithm: nothing
    carries over to or from it."""
    if source is None or source.type != "porta" or target.type != "porta":
        return
    if source.index == target.index:
        return
    _device_module.set_rng_state(_device_module.get_rng_state(source), target)


def migrate(model, optimizer=None, to="porta:1"):
    """Moves `model` (parameters with their gradients, buffers) and
    `optimizer` (its state tensors) to the device `to`, in place: every
    Parameter stays the same object (tied parameters stay tied, the
    optimizer's references stay valid), only its data moves. The source
    porta device's generator state moves to the target's. Returns `model`.

    Tensors an optimizer keeps on the CPU whatever its parameters' device
    (Adam's `step` counters) stay there."""
    target = torch.device(to)
    if target.type == "porta" and target.index is None:
        target = torch.device("porta", _device_module.current_device())
    parameters = _unique_parameters(model, optimizer)
    source = _source_device(parameters, model)
    with torch.no_grad():
        for parameter in parameters:
            old_device = parameter.device
            parameter.data = parameter.data.to(target)
            if parameter.grad is not None:
                parameter.grad = parameter.grad.to(target)
            if optimizer is not None and parameter in optimizer.state:
                state = optimizer.state[parameter]
                for key, value in state.items():
                    if isinstance(value, torch.Tensor) and value.device == old_device:
                        state[key] = value.to(target)
        if model is not None:
            for module in model.modules():
                for name, buffer in module._buffers.items():
                    if buffer is not None:
                        module._buffers[name] = buffer.to(target)
    _move_rng(source, target)
    return model
