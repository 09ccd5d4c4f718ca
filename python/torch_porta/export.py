"""Saving a PyTorch model as a .porta file, which a C program runs without Python.

    torch_porta.export(model, (x,), "model.porta", dynamic_shapes=({0: Dim("batch")},))

The model goes through torch.export and the Core ATen decompositions; each node
of the resulting graph becomes a call of an op of libporta's aten layer with
every argument in schema order (defaults filled in from the op's schema).
Parameters, buffers and constants become the weights. The file format is
described in docs/porta-format.md: a safetensors file whose metadata holds the
graph as JSON — nothing executable, no pickle.
"""
import json
import math
import operator
import os
import stat
import struct
import tempfile

import torch
from torch.utils._sympy.numbers import IntInfinity, NegativeIntInfinity

from . import _C

FORMAT_VERSION = (1, 0)

# Size arithmetic torch.export emits with dynamic shapes; the C interpreter
# runs these itself.
_SYM_OPS = {
    operator.add: "sym.add", operator.sub: "sym.sub", operator.mul: "sym.mul",
    operator.floordiv: "sym.floordiv", operator.mod: "sym.mod", operator.neg: "sym.neg",
    torch.sym_max: "sym.max", torch.sym_min: "sym.min",
}
# Checks torch.export leaves in the graph; the interpreter checks input
# shapes against the declared symbols instead.
_SKIPPED = {"aten::_assert_scalar", "aten::sym_constrain_range_for_size",
            "aten::sym_constrain_range", "aten::_assert_tensor_metadata"}
_MEMORY_FORMATS = {torch.contiguous_format: 0, torch.preserve_format: 1,
                   torch.channels_last: 2, torch.channels_last_3d: 3}
_ST_DTYPES = {torch.bool: "BOOL", torch.uint8: "U8", torch.int8: "I8", torch.int16: "I16",
              torch.int32: "I32", torch.int64: "I64", torch.float16: "F16",
              torch.bfloat16: "BF16", torch.float32: "F32", torch.float64: "F64"}


class ExportError(RuntimeError):
    """The model cannot be saved as a .porta file (the message says why)."""


def _dtype_name(dtype):
    if dtype not in _ST_DTYPES:
        raise ExportError(f"dtype {dtype} has no porta equivalent")
    return str(dtype).replace("torch.", "")


def _op_name(op):
    """libporta's name of an aten overload: "add.Tensor", "addmm"."""
    name = op._schema.name.split("::", 1)[1]
    overload = op._schema.overload_name
    return f"{name}.{overload}" if overload else name


def _float(value):
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def _finite(bound, infinite):
    """A range bound as an int, or `infinite` for an unbounded side: sympy's
    oo, or torch's int_oo (a Dim without min or max), which calls itself
    finite and not infinite, so it is recognised by type."""
    if not bound.is_finite or isinstance(bound, (IntInfinity, NegativeIntInfinity)):
        return infinite
    return int(bound)


class _GraphWriter:
    def __init__(self, ep, dim_names=None):
        self.ep = ep
        self.dim_names = dim_names or {}  # torch's symbol ("s31") -> the Dim's name
        self.values = {}  # fx node name -> graph value name
        self.ints = set()  # names of integer values
        self.multi = {}  # fx node of a multi-result op -> {index: getitem node}
        self.nodes = []
        self.symbols = {}

    # ---- declarations ----
    def _dim(self, size):
        if isinstance(size, int):
            return size
        expr = size.node.expr
        if not expr.is_Symbol:
            raise ExportError(f"input dim {expr} is an expression of symbols; export with "
                              "one symbol per dynamic dim")
        name = self.dim_names.get(str(expr), str(expr))
        if name not in self.symbols:
            lower, upper = 0, None
            vr = self.ep.range_constraints.get(expr)
            if vr is not None:
                lower = _finite(vr.lower, 0)
                upper = _finite(vr.upper, None)
            self.symbols[name] = {"name": name, "min": lower, "max": upper}
        return name

    def declare(self, node):
        val = node.meta["val"]
        return {"name": node.name, "dtype": _dtype_name(val.dtype),
                "shape": [self._dim(s) for s in val.shape]}

    # ---- arguments ----
    def _ref(self, node):
        if node.name not in self.values:
            raise ExportError(f"node {node.name} is used but not defined in the exported graph")
        return self.values[node.name]

    def _scalar(self, value, where):
        if isinstance(value, torch.fx.Node):
            name = self._ref(value)
            return {"sym": name} if name in self.ints else {"tensor": name}
        if isinstance(value, bool):
            return {"bool": value}
        if isinstance(value, int):
            return {"int": value}
        if isinstance(value, float):
            return {"float": _float(value)}
        if isinstance(value, torch.dtype):
            return {"dtype": _dtype_name(value)}
        if isinstance(value, torch.memory_format):
            return {"int": _MEMORY_FORMATS[value]}
        if isinstance(value, (torch.device, torch.layout)):
            return None  # the run's device; porta has one layout
        if isinstance(value, str):
            return {"string": value}
        raise ExportError(f"{where}: cannot store an argument of type {type(value).__name__}")

    def _arg(self, value, arg_type, where):
        if value is None:
            return None
        if isinstance(value, (list, tuple)):
            text = str(arg_type)
            if "Tensor" in text:
                return {"tensors": [None if v is None else {"tensor": self._ref(v)}["tensor"]
                                    for v in value]}
            if "float" in text:
                raise ExportError(f"{where}: float lists are not supported")
            items = []
            for v in value:
                if isinstance(v, torch.fx.Node):
                    items.append(self._ref(v))
                elif isinstance(v, bool) or not isinstance(v, int):
                    raise ExportError(f"{where}: expected integers in the list, got {v!r}")
                else:
                    items.append(v)
            return {"ints": items}
        return self._scalar(value, where)

    def _schema_args(self, node, op):
        args = []
        for i, schema_arg in enumerate(op._schema.arguments):
            if i < len(node.args) and not schema_arg.kwarg_only:
                value = node.args[i]
            elif schema_arg.name in node.kwargs:
                value = node.kwargs[schema_arg.name]
            elif schema_arg.has_default_value():
                value = schema_arg.default_value
            elif str(schema_arg.type).startswith("Optional"):
                value = None
            else:
                raise ExportError(f"{node.name}: {op} is missing argument {schema_arg.name}")
            args.append(self._arg(value, schema_arg.type, f"{node.name} ({op})"))
        return args

    # ---- nodes ----
    def _outputs(self, node, op):
        returns = op._schema.returns
        multi = len(returns) > 1 or (len(returns) == 1 and
                                     isinstance(returns[0].type, torch._C.ListType))
        if not multi:
            self.values[node.name] = node.name
            return [node.name] if returns else []
        getitems = {u.args[1]: u for u in node.users if u.target is operator.getitem}
        outputs = [None] * (max(getitems) + 1 if getitems else 0)
        for index, user in getitems.items():
            outputs[index] = user.name
            self.values[user.name] = user.name
        return outputs

    def call(self, node):
        target = node.target
        if target is operator.getitem:
            if isinstance(node.args[0], torch.fx.Node) and node.args[0].name in self.values:
                raise ExportError(f"{node.name}: indexing a single result is not supported")
            return  # its producer named it
        if target in _SYM_OPS:
            args = [self._scalar(a, node.name) for a in node.args]
            self.nodes.append({"op": _SYM_OPS[target], "args": args, "outputs": [node.name]})
            self.values[node.name] = node.name
            self.ints.add(node.name)
            return
        if not isinstance(target, torch._ops.OpOverload):
            raise ExportError(f"{node.name}: cannot export a call of {target}")
        if target._schema.name in _SKIPPED:
            return
        if target in (torch.ops.aten.sym_size.int, torch.ops.aten.sym_numel.default):
            name = "sym_size.int" if target is torch.ops.aten.sym_size.int else "sym_numel"
            args = [self._scalar(a, node.name) for a in node.args]
            self.nodes.append({"op": name, "args": args, "outputs": [node.name]})
            self.values[node.name] = node.name
            self.ints.add(node.name)
            return
        args = self._schema_args(node, target)
        outputs = self._outputs(node, target)
        self.nodes.append({"op": _op_name(target), "args": args, "outputs": outputs})


def _weight_tensor(ep, spec):
    if spec.target in ep.state_dict:
        return ep.state_dict[spec.target]
    return ep.constants[spec.target]


def _dim_names(ep, dynamic_shapes):
    """{torch's symbol: name of the torch.export.Dim the user gave}, so the
    file names dynamic dims as the user did ("batch", not "s31")."""
    from torch.export.graph_signature import InputKind
    if not dynamic_shapes:
        return {}
    user = [n for n in ep.graph.nodes if n.op == "placeholder"
            and any(s.arg.name == n.name and s.kind == InputKind.USER_INPUT
                    for s in ep.graph_signature.input_specs)]
    specs = (list(dynamic_shapes) if isinstance(dynamic_shapes, (list, tuple))
             else [dynamic_shapes.get(n.name) for n in user])
    names = {}
    for node, spec in zip(user, specs):
        items = spec.items() if isinstance(spec, dict) else enumerate(spec or ())
        shape = node.meta["val"].shape
        for dim, d in items:
            name = getattr(d, "__name__", None)
            if name and dim < len(shape) and not isinstance(shape[dim], int):
                names[str(shape[dim].node.expr)] = name
    return names


def graph_of(ep, dynamic_shapes=None):
    """The .porta graph (a dict) and weights ({name: CPU tensor}) of an
    ExportedProgram that has been through run_decompositions()."""
    from torch.export.graph_signature import InputKind, OutputKind

    writer = _GraphWriter(ep, _dim_names(ep, dynamic_shapes))
    inputs, weights, weight_decls = [], {}, []
    specs = {s.arg.name: s for s in ep.graph_signature.input_specs}
    for node in ep.graph.nodes:
        if node.op != "placeholder":
            continue
        spec = specs[node.name]
        if spec.kind == InputKind.USER_INPUT:
            if not isinstance(node.meta.get("val"), torch.Tensor):
                raise ExportError(f"input {node.name} is not a tensor; only tensor inputs can "
                                  "be exported")
            inputs.append(writer.declare(node))
            writer.values[node.name] = node.name
        elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
            tensor = _weight_tensor(ep, spec).detach()
            name = spec.target
            weights[name] = tensor
            weight_decls.append({"name": name, "dtype": _dtype_name(tensor.dtype),
                                 "shape": list(tensor.shape)})
            writer.values[node.name] = name
        else:
            raise ExportError(f"input {node.name} is a {spec.kind.name}, which a .porta file "
                              "cannot hold")

    missing = sorted({_op_name(n.target) for n in ep.graph.nodes
                      if n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload)
                      and n.target._schema.name not in _SKIPPED
                      and n.target not in (torch.ops.aten.sym_size.int,
                                           torch.ops.aten.sym_numel.default)
                      and _op_name(n.target) not in _C.aten_ops()})
    if missing:
        raise ExportError("the exported graph calls ops that libporta's aten layer does not "
                          "have: " + ", ".join(missing))
    for node in ep.graph.nodes:
        if node.op == "call_function":
            writer.call(node)
        elif node.op == "output":
            results = node.args[0]
    user = [i for i, s in enumerate(ep.graph_signature.output_specs)
            if s.kind == OutputKind.USER_OUTPUT]
    outputs = []
    for i in user:
        value = results[i]
        if not isinstance(value, torch.fx.Node) or value.name in writer.ints:
            raise ExportError(f"output {i} is {value!r}, not a tensor; only tensor outputs can "
                              "be exported")
        outputs.append(writer._ref(value))
    graph = {"version": list(FORMAT_VERSION), "symbols": list(writer.symbols.values()),
             "inputs": inputs, "weights": weight_decls, "nodes": writer.nodes,
             "outputs": outputs}
    return graph, weights


def _output_target(path):
    """The regular file that writing `path` replaces, and its permissions
    (None when it is new), as libporta's writers
    treat a user-named output (src/core/output_file.h): symbolic links are
    followed, so the file they lead to is replaced and they stay links; a
    directory, FIFO, device or socket there is refused and left alone."""
    target = os.path.realpath(path)
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        return target, None
    if not stat.S_ISREG(mode):
        kinds = [(stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                 (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                 (stat.S_ISSOCK, "a socket")]
        kind = next((name for test, name in kinds if test(mode)), "a special file")
        shown = f"{path} -> {target}" if os.path.abspath(path) != target else str(path)
        raise OSError(f"{shown}: expected a regular file to replace or a new name, got {kind} "
                      f"(left as it is)")
    return target, stat.S_IMODE(mode)


def _write_safetensors(path, tensors, metadata):
    """A safetensors file, largest elements first so every tensor is aligned
    for zero-copy loading; written to a temporary file renamed into place
    (see _output_target)."""
    target, mode = _output_target(path)
    order = sorted(tensors, key=lambda n: -tensors[n].element_size())
    header, offset, blobs = {"__metadata__": metadata}, 0, []
    for name in order:
        t = tensors[name].detach().to("cpu").contiguous()
        data = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": _ST_DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    text += b" " * (-len(text) % 8)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".porta-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(struct.pack("<Q", len(text)))
            f.write(text)
            for data in blobs:
                f.write(data)
        if mode is not None:
            os.chmod(tmp, mode)  # the replacement keeps the replaced file's permissions
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def save(ep, path, dynamic_shapes=None):
    """Writes an ExportedProgram (already decomposed to Core ATen) to `path`;
    dynamic_shapes, when given, names its dynamic dims."""
    graph, weights = graph_of(ep, dynamic_shapes)
    metadata = {"porta.format": "%d.%d" % FORMAT_VERSION,
                "porta.graph": json.dumps(graph, separators=(",", ":"), allow_nan=False)}
    _write_safetensors(path, weights, metadata)


def _attention_as_math(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                       scale=None, enable_gqa=False):
    """scaled_dot_product_attention as PyTorch's math attention, its result
    laid out as the CPU's fused kernel lays it out (heads inside sequence
    positions). PyTorch's default decomposition gives another layout than
    the one the graph was traced with, so a later view of it fails in
    run_decompositions (GPT-2's attention output projection). A boolean
    mask becomes an additive one, which the math kernel expects."""
    aten = torch.ops.aten
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        attn_mask = torch.zeros_like(attn_mask, dtype=query.dtype).masked_fill(
            attn_mask.logical_not(), float("-inf"))
    out = aten._scaled_dot_product_attention_math.default(
        query, key, value, attn_mask, dropout_p, is_causal, None, scale=scale,
        enable_gqa=enable_gqa)[0]
    return out.transpose(1, 2).contiguous().transpose(1, 2)


def decompositions():
    """The decomposition table export uses: Core ATen's, attention as math."""
    table = torch.export.default_decompositions()
    table[torch.ops.aten.scaled_dot_product_attention.default] = _attention_as_math
    return table


def export(model, example_inputs, path, dynamic_shapes=None, strict=False):
    """Exports `model` called on `example_inputs` (a tuple of tensors) with
    torch.export, decomposes it to Core ATen and saves it as a .porta file.
    dynamic_shapes is torch.export's (e.g. ({0: torch.export.Dim("batch")},)).
    Returns the ExportedProgram."""
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    ep = torch.export.export(model, tuple(example_inputs), dynamic_shapes=dynamic_shapes,
                             strict=strict)
    ep = ep.run_decompositions(decompositions())
    save(ep, path, dynamic_shapes)
    return ep
