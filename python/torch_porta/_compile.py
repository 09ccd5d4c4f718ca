"""torch.compile(model, backend="porta"), and torch.compile(model) on porta.

Dynamo captures the program; aot_autograd traces it to Core ATen (with
PyTorch's core decompositions) and splits forward from backward for
training. Each compiled graph runs on porta tensors with libporta's fusion
on: its ops are recorded as the graph issues them and run as fused kernels
when the graph ends, so libporta, not Python, decides what becomes one
kernel. libporta's kernels take sizes at run time, so a graph recompiled by
Dynamo for a new size (or run with symbolic sizes after mark_dynamic, whose
SymInt inputs arrive here as ints) reuses the kernels it already has.

Inputs may live on "porta" or on the CPU. A graph with CPU inputs is
traced as it would run on porta (so PyTorch picks the ops it picks for
porta, not the CPU's own kernels) and runs on porta copies of them, with
parameter copies kept between calls (keyed by the tensor, its version
counter and data pointer, so an in-place update or a new `.data` copies
again); CPU buffers the program writes are written back, and outputs go
back to the device the program computes them on. The backend is registered when torch._dynamo loads, so importing
torch_porta is enough and torch_porta's import stays light.

torch.compile(model) with no backend named (Inductor) runs porta's compiler
too, for every graph Dynamo captures that computes anything on porta; a
graph with no porta tensor still goes to Inductor, so CPU models compiled
in the same process are unaffected. Inductor's own per-device registration
(register_backend_for_device, or the Scheduling/PythonWrapperCodegen a
PrivateUse1 device module may offer) only plugs in a kernel generator for
Inductor's loop IR, below Inductor's lowering; porta compiles aten graphs
with its own fusion, so there is nothing there to plug in. PyTorch has no
per-device choice of the dynamo backend either, so one small function,
_route_default_backend, wraps the default backend's call (the class
torch.compile builds for backend="inductor") and hands porta graphs to
porta_backend. Inductor's options (mode="reduce-overhead", max-autotune)
do not apply to porta graphs; dynamic=True does, as with backend="porta".
The choice reads only the tensors' device type "porta", not how the device
is registered with PyTorch. Dynamo's DeviceInterface for "porta" is in
_dynamo_device.py.
"""
import contextlib
import importlib.abc
import importlib.machinery
import os
import re
import sys
import weakref

import torch

from . import _C, _metrics

PORTA = torch.device("porta", 0)


@contextlib.contextmanager
def fused():
    """Runs the body with libporta's fusion on; what it issued runs at the
    end. In fused eager mode (fusion already on) it stays recorded instead,
    with the caller's ops around it — the loss, the optimizer step — and
    runs, fused with them, at the caller's next sync point."""
    was_on = _C.get_fusion()
    if not was_on:
        _C.set_fusion(True)
    try:
        yield
        if not was_on:
            _C.flush()
    finally:
        if not was_on:
            _C.set_fusion(False)


# ---- moving CPU inputs to porta ----

class _CopyCache:
    """Porta copies of the CPU tensors a compiled program is given, kept
    while the CPU tensor lives, for parameters (they come on every call and
    change only when trained) and buffers the program writes (running
    statistics); other inputs, a batch say, are copied at each call, so a
    data set held on the CPU is not held on porta too. A copy is valid while
    the tensor's version counter and data pointer are those it was made
    from, and while it carries a gradient path exactly when one is wanted
    now."""

    def __init__(self):
        self._copies = {}  # id(tensor) -> (weakref, version, data_ptr, differentiable, copy)

    def get(self, tensor):
        differentiable = tensor.requires_grad and torch.is_grad_enabled()
        entry = self._copies.get(id(tensor))
        if entry is not None and entry[0]() is tensor and entry[1] == tensor._version \
                and entry[2] == tensor.data_ptr() and entry[3] == differentiable:
            return entry[4]
        # A differentiable copy: gradients reach the CPU tensor through it.
        copy = tensor.to(PORTA) if differentiable else tensor.detach().to(PORTA)
        if tensor.requires_grad or isinstance(tensor, torch.nn.Parameter):
            self.put(tensor, copy, differentiable)
        return copy

    def put(self, tensor, copy, differentiable):
        key = id(tensor)
        try:
            # The entry goes when the tensor does.
            reference = weakref.ref(tensor, lambda _, key=key: self._copies.pop(key, None))
        except TypeError:
            return
        self._copies[key] = (reference, tensor._version, tensor.data_ptr(), differentiable, copy)

    def clear(self):
        self._copies.clear()


_copies = _CopyCache()


def _retarget_cpu(gm):
    """Makes a Dynamo graph compute on porta what it computed on the CPU:
    device arguments (factories, .to) and CPU tensor constants."""
    cpu = torch.device("cpu")

    def retarget(value):
        if isinstance(value, torch.device) and value == cpu:
            return PORTA
        if isinstance(value, (list, tuple)):
            return type(value)(retarget(item) for item in value)
        return value

    for node in gm.graph.nodes:
        if node.op in ("call_function", "call_method"):
            node.args = retarget(node.args)
            node.kwargs = {key: PORTA if key == "device" and value == "cpu" else retarget(value)
                           for key, value in node.kwargs.items()}
        elif node.op == "get_attr":
            value = _attribute(gm, node.target)
            if isinstance(value, torch.Tensor) and value.device.type == "cpu":
                _set_attribute(gm, node.target, value.to(PORTA))
    gm.recompile()


def _attribute(gm, target):
    value = gm
    for part in target.split("."):
        value = getattr(value, part, None)
    return value


def _set_attribute(gm, target, value):
    *path, name = target.split(".")
    owner = gm
    for part in path:
        owner = getattr(owner, part)
    if isinstance(getattr(owner, name, None), torch.nn.Parameter):
        value = torch.nn.Parameter(value, requires_grad=False)
    setattr(owner, name, value)


def _on_porta(compiled, output_devices, foreign):
    """Runs `compiled` (made for porta inputs) on CPU inputs (those
    `foreign` marks): they are copied to porta, inputs the program wrote
    are written back, and outputs return to the device the program computes
    them on."""
    back = [device is not None and device.type != "porta" for device in output_devices]

    def run(*args):
        moved, copied = [], []
        for value, move in zip(args, foreign):
            if move and value.device.type != "porta":
                copy = _copies.get(value)
                copied.append((value, copy, copy._version))
                value = copy
            moved.append(value)
        outputs = compiled(*moved)
        del moved
        for original, copy, version in copied:
            if copy._version != version:  # the program wrote it (running statistics)
                with torch.no_grad():
                    original.copy_(copy)
                _copies.put(original, copy, copy.requires_grad)
        single = not isinstance(outputs, (list, tuple))
        items = [outputs] if single else list(outputs)
        for i, (move, device) in enumerate(zip(back, output_devices)):
            if move and isinstance(items[i], torch.Tensor) and items[i].device != device:
                items[i] = items[i].to(device)
        return items[0] if single else type(outputs)(items)
    return run


# ---- the compilers ----

_STACK_LINE = re.compile(r'File "([^"]+)", line (\d+)')


def _node_site(node):
    """"file:line (aten::op)" of the program line a graph node comes from,
    or None when the node does not say."""
    frames = _STACK_LINE.findall(node.meta.get("stack_trace") or "")
    if not frames:
        return None
    filename, line = frames[-1]
    name = getattr(node.target, "__name__", str(node.target))
    return f"{filename}:{line} (aten::{name})"


def _name_sites(gm):
    """Makes the graph name, before the ops of each program line, that line
    as the site of the primitives they record, so an error raised at the
    flush names the program's line rather than the generated graph's."""
    current = None
    for node in list(gm.graph.nodes):
        if node.op != "call_function":
            continue
        site = _node_site(node)
        if site is None or site == current:
            continue
        with gm.graph.inserting_before(node):
            gm.graph.call_function(_C.trace_pin_site, (site,))
        current = site
    gm.recompile()


def _graph_compiler(kind):
    """An aot_autograd compiler: runs an aten graph (forward, backward or
    inference) with fusion on."""
    def compile_graph(gm, example_inputs):
        _metrics.count_compile(kind)
        _name_sites(gm)
        run_graph = gm.forward

        def run(args):
            arguments = list(args)
            args.clear()  # the boxed convention: the graph may free its inputs
            try:
                with fused():
                    return run_graph(*arguments)
            finally:
                _C.trace_pin_site(None)

        run._boxed_call = True
        return run
    return compile_graph


def _decompositions():
    from torch._decomp import core_aten_decompositions
    return core_aten_decompositions()


_aot_backend = None


def _output_devices(gm):
    outputs = [node for node in gm.graph.nodes if node.op == "output"][0].args[0]
    if not isinstance(outputs, (list, tuple)):
        outputs = [outputs]
    devices = []
    for node in outputs:
        value = node.meta.get("example_value", node.meta.get("val")) \
            if isinstance(node, torch.fx.Node) else None
        devices.append(value.device if isinstance(value, torch.Tensor) else None)
    return devices


def _is_python_scalar(placeholder):
    """Whether a graph input is a Python number Dynamo passes as a 0-d CPU
    tensor (a float under dynamic=True, a LayerNorm's eps say): the graph
    reads it back with .item(), so it stays on the CPU."""
    grapharg = placeholder.meta.get("grapharg")
    return grapharg is not None and not grapharg.is_tensor


def porta_backend(gm, example_inputs, **kwargs):
    """The torch.compile backend "porta" (a Dynamo compiler function)."""
    global _aot_backend
    if _aot_backend is None:
        from torch._dynamo.backends.common import aot_autograd
        _aot_backend = aot_autograd(
            fw_compiler=_graph_compiler("forward"),
            bw_compiler=_graph_compiler("backward"),
            inference_compiler=_graph_compiler("inference"),
            decompositions=_decompositions)
    _metrics.count_compile("dynamo")
    placeholders = [node for node in gm.graph.nodes if node.op == "placeholder"]
    foreign = [isinstance(value, torch.Tensor) and value.device.type != "porta"
               and not _is_python_scalar(node)
               for node, value in zip(placeholders, example_inputs)]
    if not any(foreign):
        return _aot_backend(gm, example_inputs, **kwargs)
    # Traced as porta runs it (so PyTorch picks the ops and decompositions
    # it would pick on porta, not the CPU's own kernels), run on copies.
    # Dynamo's fake inputs (symbolic sizes included) become fake porta
    # tensors, which aot_autograd takes as they are.
    output_devices = _output_devices(gm)
    examples = list(example_inputs)
    for i, (node, move) in enumerate(zip(placeholders, foreign)):
        fake = node.meta.get("example_value") if move else None
        if fake is None:
            continue
        with fake.fake_mode:
            examples[i] = fake.detach().to(PORTA).requires_grad_(fake.requires_grad)
    _retarget_cpu(gm)
    return _on_porta(_aot_backend(gm, examples, **kwargs), output_devices, foreign)


# ---- torch.compile's default backend ----

def _is_porta_tensor(value):
    return isinstance(value, torch.Tensor) and value.device.type == "porta"


def _computes_on_porta(gm, example_inputs):
    """Whether a Dynamo graph takes, makes or returns a porta tensor (its
    nodes' example values say where each value lives)."""
    if any(_is_porta_tensor(value) for value in example_inputs):
        return True
    from torch.utils._pytree import tree_leaves
    return any(_is_porta_tensor(leaf) for node in gm.graph.nodes
               for leaf in tree_leaves(node.meta.get("example_value")))


def _route_default_backend(inductor_wrapper):
    """Makes torch.compile's default backend hand graphs that compute on
    porta to porta_backend and keep every other graph for Inductor, which
    has no code generator for porta (see the module's docstring)."""
    inductor_call = inductor_wrapper.__call__
    if getattr(inductor_call, "routes_porta_graphs", False):
        return

    def __call__(self, model_, inputs_, **kwargs):
        if _computes_on_porta(model_, inputs_):
            return porta_backend(model_, inputs_)
        return inductor_call(self, model_, inputs_, **kwargs)

    __call__.routes_porta_graphs = True
    inductor_wrapper.__call__ = __call__


# ---- registration ----

def _register_backend(registry):
    if "porta" not in registry._COMPILER_FNS:
        registry.register_backend(compiler_fn=porta_backend, name="porta")


def _skip_porta_frames(trace_rules):
    # torch_porta's Python kernels run under the dispatcher, below the
    # program; Dynamo must not try to compile them as frames of the program
    # when they run eagerly (after a graph break, say).
    trace_rules.add("torch_porta")


def _register_device_interface(device_interface):
    from . import _dynamo_device
    _dynamo_device.register()


# Dynamo's modules and what to do once each has loaded.
_ON_LOAD = {"torch._dynamo.backends.registry": _register_backend,
            "torch._dynamo.trace_rules": _skip_porta_frames,
            "torch._dynamo.device_interface": _register_device_interface}


class _WhenDynamoLoads(importlib.abc.MetaPathFinder):
    """Runs _ON_LOAD's functions as soon as their modules have loaded, so
    `import torch_porta` does not pay for importing torch._dynamo."""

    def __init__(self, waiting):
        self.waiting = waiting

    def find_spec(self, name, path, target=None):
        action = self.waiting.pop(name, None)
        if action is None:
            return None
        if not self.waiting:
            sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        original_exec = spec.loader.exec_module

        def exec_module(module):
            original_exec(module)
            action(module)
        spec.loader.exec_module = exec_module
        return spec


def install():
    _route_default_backend(torch._TorchCompileInductorWrapper)
    waiting = {}
    for name, action in _ON_LOAD.items():
        module = sys.modules.get(name)
        if module is not None:
            action(module)
        else:
            waiting[name] = action
    if waiting:
        sys.meta_path.insert(0, _WhenDynamoLoads(waiting))
    if "recompiles" in os.environ.get("PORTA_LOG", ""):  # as libporta reads it
        # libporta prints why it schedules a trace anew; Dynamo says why it
        # recompiled a frame (the guard that failed).
        from torch._logging import set_logs
        set_logs(recompiles=True)
