"""What kind of object a library call makes: the catalogue of library types object
typing starts from (``torch`` optimizers, schedulers and ``GradScaler``, module classes,
accelerate's ``Accelerator``, Lightning's ``Fabric`` and ``Trainer``, DeepSpeed engines,
diffusers' noise schedulers, ``DistributedSampler``), by fully qualified name.

A kind is what the analysis asks of an object: whether ``x.step()`` on a scaler or an
optimizer reads on the host (the device queue), whether a class is a module whose
``forward`` runs every step (``MODULE_KINDS``). ``OBJECT`` is a project class whose bases are all
known and none of them is catalogued: an object of no kind the analysis asks about.
"""

from __future__ import annotations

import re

from ddplint.analysis.api import (
    ACCELERATE_CLASSES,
    DEEPSPEED_INITIALIZE,
    DISTRIBUTED_SAMPLERS,
    FABRIC_CLASSES,
)

OPTIMIZER = "optimizer"
SCHEDULER = "scheduler"
SCALER = "scaler"
ENGINE = "engine"
ACCELERATOR = "accelerator"
FABRIC = "fabric"
TRAINER = "trainer"
MODULE = "module"
LIGHTNING_MODULE = "lightning_module"
#: A diffusion model's noise schedule: its ``step()`` denoises a sample.
NOISE_SCHEDULER = "noise_scheduler"
#: ``DistributedSampler``: its shuffle is seeded with the epoch ``set_epoch`` gives it.
DISTRIBUTED_SAMPLER = "distributed_sampler"
#: A value computed by a module or a tensor function, not an object of the frameworks.
TENSOR = "tensor"
#: A project class of known bases, none catalogued.
OBJECT = "object"
#: An iterable whose iteration never ends (its ``__iter__`` loops forever, or a generator
#: function that does): ``endless_iterables``.
ENDLESS_ITERABLE = "endless_iterable"
#: An iterable that yields the items of its first argument until they run out (a
#: prefetcher around a loader): endless when that argument is (``endless_iterables``).
FIRST_ARGUMENT_ITEMS = "first_argument_items"
#: Kinds a class takes from its own ``__iter__`` alone (no framework base claims it).
_ITERATION_KINDS = (ENDLESS_ITERABLE, FIRST_ARGUMENT_ITEMS)

#: Kinds of module classes (their ``forward`` and ``*_step`` run every step).
MODULE_KINDS = frozenset({MODULE, LIGHTNING_MODULE, ENGINE})

_LIGHTNING_PACKAGES = ("lightning.pytorch", "pytorch_lightning", "lightning")
_LIGHTNING_MODULES = frozenset(
    f"{package}{path}.LightningModule"
    for package in _LIGHTNING_PACKAGES
    for path in ("", ".core", ".core.module", ".core.lightning")
)
_TRAINERS = frozenset(
    f"{package}{path}.Trainer"
    for package in _LIGHTNING_PACKAGES
    for path in ("", ".trainer", ".trainer.trainer")
)

#: Classes and factories by fully qualified name.
_EXACT: dict[str, str] = {
    **dict.fromkeys(ACCELERATE_CLASSES, ACCELERATOR),
    **dict.fromkeys(FABRIC_CLASSES, FABRIC),
    **dict.fromkeys(_TRAINERS, TRAINER),
    **dict.fromkeys(DISTRIBUTED_SAMPLERS, DISTRIBUTED_SAMPLER),
    **dict.fromkeys(_LIGHTNING_MODULES, LIGHTNING_MODULE),
    **dict.fromkeys(
        (
            "torch.nn.Module",
            "torch.nn.modules.module.Module",
            "torch.autograd.Function",
            "nemo.core.NeuralModule",
            "nemo.core.classes.NeuralModule",
            "nemo.core.classes.module.NeuralModule",
            "megatron.core.transformer.module.MegatronModule",
            "megatron.model.module.MegatronModule",
            "megatron.model.MegatronModule",
            "transformers.PreTrainedModel",
            "transformers.modeling_utils.PreTrainedModel",
            "torch.compile",
            "timm.create_model",
        ),
        MODULE,
    ),
    **dict.fromkeys(
        (
            "nemo.core.ModelPT",
            "nemo.core.classes.ModelPT",
            "nemo.core.classes.modelPT.ModelPT",
        ),
        LIGHTNING_MODULE,
    ),
    **dict.fromkeys(
        (
            "torch.cuda.amp.GradScaler",
            "torch.amp.GradScaler",
            "torch.GradScaler",
            "torch.cuda.amp.grad_scaler.GradScaler",
            "torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler",
        ),
        SCALER,
    ),
    **dict.fromkeys(
        (
            "transformers.get_scheduler",
            "transformers.optimization.get_scheduler",
            "diffusers.optimization.get_scheduler",
            "timm.scheduler.create_scheduler",
            "timm.scheduler.create_scheduler_v2",
        ),
        SCHEDULER,
    ),
    **dict.fromkeys(
        (
            "transformers.AdamW",
            "transformers.Adafactor",
            "transformers.optimization.AdamW",
            "transformers.optimization.Adafactor",
            "timm.optim.create_optimizer",
            "timm.optim.create_optimizer_v2",
        ),
        OPTIMIZER,
    ),
    **dict.fromkeys(
        ("deepspeed.DeepSpeedEngine", "deepspeed.runtime.engine.DeepSpeedEngine"), ENGINE
    ),
}


def iterating_kind(from_bases: str | None, own_iteration: str | None) -> str | None:
    """A class's kind given the kind its bases give and what its own ``__iter__`` makes
    (None: it defines none; ``ENDLESS_ITERABLE``, ``FIRST_ARGUMENT_ITEMS``, or
    ``OBJECT`` for an iteration that ends): an iteration kind is the class's where no
    framework kind claims it; an ``__iter__`` of its own replaces the bases'."""
    if own_iteration in _ITERATION_KINDS:
        return own_iteration if from_bases in (None, OBJECT, *_ITERATION_KINDS) else from_bases
    if own_iteration is None:
        return from_bases
    return OBJECT if from_bases in _ITERATION_KINDS else from_bases


#: Families of classes by the module that defines them (a class name: capitalised).
_FAMILIES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^torch\.optim\.lr_scheduler\.[A-Z]\w*$"), SCHEDULER),
    (re.compile(r"^torch\.optim\.swa_utils\.SWALR$"), SCHEDULER),
    (re.compile(r"^torch\.optim\.(?:[a-z_]+\.)?[A-Z]\w*$"), OPTIMIZER),
    (
        re.compile(r"^(?:apex\.optimizers|bitsandbytes\.optim|deepspeed\.ops\.adam)\.[A-Z]\w*$"),
        OPTIMIZER,
    ),
    (re.compile(r"^transformers\.(?:optimization\.)?get_\w*schedule\w*$"), SCHEDULER),
    (re.compile(r"^timm\.scheduler\.(?:\w+\.)?[A-Z]\w*Scheduler$"), SCHEDULER),
    (re.compile(r"^torch\.nn\.(?:modules\.)?(?:[a-z_]+\.)*(?!Parameter$)[A-Z]\w*$"), MODULE),
    (
        re.compile(
            r"^transformers\.(?:[a-z_.]+\.)?(?:AutoModel\w*|\w+PreTrainedModel|\w+For[A-Z]\w*)$"
        ),
        MODULE,
    ),
    # NeMo's task models (``nemo.collections.asr.models.ASRModel``): ``ModelPT``s.
    (
        re.compile(r"^nemo\.collections\.\w+\.models\.(?:[a-z_]+\.)*[A-Z]\w*Model$"),
        LIGHTNING_MODULE,
    ),
    (
        re.compile(r"^diffusers\.(?:schedulers\.)?(?:[a-z_]+\.)?[A-Z]\w*Scheduler\w*$"),
        NOISE_SCHEDULER,
    ),
    (
        re.compile(
            r"^torch\.(?:tensor|zeros|ones|empty|full|rand|randn|randint|arange|stack|cat)(?:_like)?$"
        ),
        TENSOR,
    ),
)
#: Class methods that make an instance of their class (``AutoModel.from_pretrained``).
_CONSTRUCTORS = frozenset({"from_pretrained", "from_config", "load_from_checkpoint"})


def library_kind(qualified: str) -> str | None:
    """The kind of object calling the library callable ``qualified`` makes (or that a
    class of that name is), None where the catalogue does not say. ``Class.from_pretrained``
    makes a ``Class``."""
    found = _EXACT.get(qualified)
    if found is not None:
        return found
    for pattern, kind in _FAMILIES:
        if pattern.match(qualified):
            return kind
    head, _, method = qualified.rpartition(".")
    if method in _CONSTRUCTORS and head:
        return library_kind(head)
    return None


def is_deepspeed_initialize(qualified: str | None) -> bool:
    """``deepspeed.initialize``: a tuple whose first item is the engine."""
    return qualified == DEEPSPEED_INITIALIZE
