"""Whether a model wrapped in ``DistributedDataParallel`` holds no buffers: its forward
then broadcasts nothing (DDP syncs buffers only where the module has some), so running
it on some ranks leaves no collective unpaired.

A model is known buffer-free only by its class, defined in this module: a subclass of
``torch.nn.Module`` (or of such a class of the module) none of whose methods registers
a buffer, whose ``__init__`` builds only layers that hold none (``nn.Linear``,
``nn.Embedding``, ``nn.LayerNorm``, the containers, ``nn.Parameter``; not
``nn.BatchNorm*``), other buffer-free classes of the module, plain tensors and values;
any other call there (a factory, a library model, a class of another module) leaves it
unknown. The wrapped name is followed through its bindings in the wrapping function
(``model = GPT(config)``; ``model = torch.compile(model)``; ``model.to(device)``).
"""

from __future__ import annotations

import ast

from ddplint.analysis.control_flow import own_nodes
from ddplint.analysis.module_nodes import ModuleNodes
from ddplint.analysis.names import BUILTIN_NAMES, Names, dotted_name

#: ``torch.nn`` classes that hold no buffers (their state is parameters only).
BUFFER_FREE_LAYERS = frozenset(
    {
        *("Linear", "Bilinear", "LazyLinear", "Identity", "Embedding", "EmbeddingBag"),
        *("LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm"),
        *("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout"),
        *("ReLU", "ReLU6", "GELU", "SiLU", "Mish", "Tanh", "Sigmoid", "LeakyReLU", "PReLU"),
        *("ELU", "SELU", "Hardswish", "Hardtanh", "Softplus", "Softmax", "LogSoftmax", "GLU"),
        *("Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"),
        *("MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d"),
        *("AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool2d", "Upsample"),
        *("Flatten", "Unflatten", "PixelShuffle", "MultiheadAttention"),
        *("Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"),
        "Parameter",
    }
)
_NN = "torch.nn."
_NN_FUNCTIONS = ("torch.nn.init.", "torch.nn.functional.")
_MODULE_BASES = frozenset({"torch.nn.Module"})
#: Methods that unwrap nothing and return the model itself (or a compiled view of it).
_SAME_MODEL_METHODS = frozenset({"to", "cuda", "half", "bfloat16", "float", "double", "train"})
_SAME_MODEL_FUNCTIONS = frozenset({"torch.compile"})


class BufferFreeModels:
    """Which classes of a module hold no buffers, and which wrapping calls wrap one."""

    def __init__(self, nodes: ModuleNodes, names: Names) -> None:
        self._nodes = nodes
        self._names = names
        self._classes = {c.name: c for c in nodes.module.body if isinstance(c, ast.ClassDef)}
        self._known: dict[str, bool] = {}

    def wraps_buffer_free(self, wrapping: ast.Call) -> bool:
        """Whether the model ``DistributedDataParallel(model, ...)`` wraps is built, in
        the function that wraps it, only from buffer-free classes of this module."""
        if not wrapping.args:
            return False
        scope = self._nodes.scope_of_call(wrapping)
        return self._built_buffer_free(wrapping.args[0], scope, wrapping, depth=3)

    def _built_buffer_free(
        self, value: ast.expr, scope: ast.AST, wrapping: ast.Call, depth: int
    ) -> bool:
        value = self._model_itself(value)
        if isinstance(value, ast.Call):
            return isinstance(value.func, ast.Name) and self.buffer_free(value.func.id)
        if not isinstance(value, ast.Name) or depth < 0:
            return False
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = scope.args
            every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
            if any(a.arg == value.id for a in every):
                return False  # the caller's model
        elif not isinstance(scope, ast.Module):
            return False
        nodes = list(own_nodes(scope))
        assigned = [
            node
            for node in nodes
            if isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == value.id
            and node.value is not wrapping
        ]
        plain = {
            id(node.targets[0])
            for node in nodes
            if node in assigned or (isinstance(node, ast.Assign) and node.value is wrapping)
        }
        stored = [
            node
            for node in nodes
            if isinstance(node, ast.Name)
            and node.id == value.id
            and isinstance(node.ctx, ast.Store)
        ]
        if not assigned or any(id(node) not in plain for node in stored):
            return False  # bound otherwise too (unpacked, a loop target)
        for node in assigned:
            built = self._model_itself(node.value)
            if isinstance(built, ast.Name) and built.id == value.id:
                continue  # ``model = model.to(device)``: the same model handed on
            if not self._built_buffer_free(built, scope, wrapping, depth - 1):
                return False
        return True

    def _model_itself(self, value: ast.expr) -> ast.expr:
        """What ``torch.compile(m)``, ``m.to(device)``, ``m.cuda()`` return: ``m``."""
        while isinstance(value, ast.Call):
            func = value.func
            if isinstance(func, ast.Attribute) and func.attr in _SAME_MODEL_METHODS:
                value = func.value
            elif self._names.resolve(func) in _SAME_MODEL_FUNCTIONS and value.args:
                value = value.args[0]
            else:
                break
        return value

    def buffer_free(self, name: str) -> bool:
        """Whether the class ``name`` of this module holds no buffers."""
        if name not in self._known:
            self._known[name] = False  # a cycle proves nothing
            cls = self._classes.get(name)
            self._known[name] = cls is not None and self._class_buffer_free(cls)
        return self._known[name]

    def _class_buffer_free(self, cls: ast.ClassDef) -> bool:
        """A subclass of ``nn.Module`` (or of a buffer-free class here) whose methods
        register no buffer and whose ``__init__`` builds nothing that holds one."""
        if not cls.bases or cls.keywords:
            return False
        for base in cls.bases:
            resolved = self._names.resolve(base)
            local = base.id if isinstance(base, ast.Name) and base.id in self._classes else None
            if local is not None and not self.buffer_free(local):
                return False
            if local is None and resolved not in _MODULE_BASES:
                return False
        methods = [m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for method in methods:
            calls = [n for n in own_nodes(method) if isinstance(n, ast.Call)]
            if any(
                isinstance(c.func, ast.Attribute) and c.func.attr == "register_buffer"
                for c in calls
            ):
                return False
            if method.name == "__init__" and not all(self._builds_no_buffers(c) for c in calls):
                return False
        init = next((m for m in methods if m.name == "__init__"), None)
        return init is None or not _holds_handed_modules(init, methods, self._names)

    def _builds_no_buffers(self, call: ast.Call) -> bool:
        """A call of ``__init__`` that builds nothing holding buffers."""
        func = call.func
        resolved = self._names.resolve(func) or dotted_name(func) or ""
        if resolved.startswith(_NN):
            # ``nn.init.normal_``, ``nn.functional.gelu``: functions, no layers (not
            # ``nn.utils.spectral_norm``, which registers buffers).
            return resolved.rsplit(".", 1)[-1] in BUFFER_FREE_LAYERS or resolved.startswith(
                _NN_FUNCTIONS
            )
        if resolved.startswith("torch.") and resolved.count(".") == 1:
            # A tensor (``torch.zeros``, ``torch.tril``): a plain attribute, no buffer.
            return not resolved[len("torch.") :][:1].isupper()
        if isinstance(func, ast.Name):
            if func.id in self._classes:
                return self.buffer_free(func.id)
            return func.id in BUILTIN_NAMES and resolved == func.id
        if not isinstance(func, ast.Attribute):
            return False  # ``getattr(nn, kind)(width)``: not known
        head = func.value
        while isinstance(head, ast.Attribute):
            head = head.value
        if isinstance(head, ast.Call):
            return isinstance(head.func, ast.Name) and head.func.id == "super"
        # A method of a value (``self.apply(...)``, ``config.get(...)``,
        # ``layers.append(...)``: its arguments are calls checked on their own), not a
        # library's factory (``timm.create_model(...)``).
        return not (isinstance(head, ast.Name) and self._names.resolve(head) not in (None, head.id))


#: Calls that may add a module the caller handed in to the model (``nn.Sequential(*parts)``,
#: ``self.blocks.append(block)``).
_ADDING = frozenset(
    {"Sequential", "ModuleList", "ModuleDict", "append", "extend", "insert", "add_module"}
    | {"register_module", "update", "__setitem__"}
)


def _holds_handed_modules(
    init: ast.FunctionDef | ast.AsyncFunctionDef,
    methods: list[ast.FunctionDef | ast.AsyncFunctionDef],
    names: Names,
) -> bool:
    """Whether the class may hold a module its caller hands ``__init__``
    (``self.backbone = backbone`` then ``self.backbone(x)``, ``nn.Sequential(*layers)``):
    those may hold buffers. A setting kept whole (``self.config = config``) and only read
    through its fields (``self.config.width``) holds none."""
    handed = {a.arg for a in [*init.args.posonlyargs, *init.args.args, *init.args.kwonlyargs][1:]}
    for arguments in (init.args.vararg, init.args.kwarg):
        if arguments is not None:
            handed.add(arguments.arg)
    nodes = list(own_nodes(init))
    for _ in range(2):  # locals read from what was handed (``parts = list(layers)``)
        for node in nodes:
            if isinstance(node, ast.Assign) and _reads(node.value, handed):
                handed |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    fields: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Call) and _reads_arguments(node, handed):
            called = names.resolve(node.func) or dotted_name(node.func) or ""
            if called.rsplit(".", 1)[-1] in _ADDING:
                return True
        if not isinstance(node, ast.Assign) or isinstance(node.value, ast.Call):
            continue
        if _reads(node.value, handed):
            fields |= {
                t.attr for t in node.targets if isinstance(t, ast.Attribute) and _self_field(t)
            }
    return bool(fields) and any(_used_as_module(m, fields) for m in methods)


def _reads(expression: ast.AST, handed: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in handed for n in ast.walk(expression))


def _reads_arguments(call: ast.Call, handed: set[str]) -> bool:
    """Whether ``call`` is given something handed in itself, not only a value a call
    made from it (``nn.Linear(config.width, ...)``, ``Block(config)``: checked as calls)."""
    pending: list[ast.AST] = [*call.args, *(k.value for k in call.keywords)]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Name) and node.id in handed:
            return True
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name) and node.func.id in _DISPLAYS:
                pending.extend([*node.args, *(k.value for k in node.keywords)])
            continue
        pending.extend(ast.iter_child_nodes(node))
    return False


#: Builtins that build a container of what they are given.
_DISPLAYS = frozenset({"dict", "list", "tuple"})


def _self_field(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def _used_as_module(method: ast.FunctionDef | ast.AsyncFunctionDef, fields: set[str]) -> bool:
    """Whether ``method`` runs one of ``fields`` as a module: calls it (``self.x(h)``,
    ``self.x.encoder(h)``, ``self.x[0](h)``) or walks it (``for block in self.x``). A
    setting read for its values (``self.config.width``, ``h.view(b, self.heads)``) is
    none."""
    parents: dict[int, ast.AST] = {}
    for node in ast.walk(method):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    for node in ast.walk(method):
        if not (isinstance(node, ast.Attribute) and _self_field(node) and node.attr in fields):
            continue
        parent = parents.get(id(node))
        if isinstance(parent, ast.Call) and parent.func is node:
            return True
        if isinstance(parent, (ast.For, ast.AsyncFor, ast.comprehension)) and parent.iter is node:
            return True
        if isinstance(parent, (ast.Attribute, ast.Subscript)) and parent.value is node:
            grand = parents.get(id(parent))
            if isinstance(grand, ast.Call) and grand.func is parent:
                return True
    return False
