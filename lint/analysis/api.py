"""The distributed APIs the analysis knows by name: torch.distributed's collectives,
distributed checkpointing, and how the rank is spelled across frameworks.

Plain data, shared by the analysis core and the older structural layer.
"""

from __future__ import annotations

#: Collective functions of ``torch.distributed`` (p2p send/recv are not collectives).
TORCH_COLLECTIVES = frozenset(
    {
        "barrier",
        "monitored_barrier",
        "all_reduce",
        "all_reduce_coalesced",
        "all_gather",
        "all_gather_coalesced",
        "all_gather_into_tensor",
        "all_gather_object",
        "broadcast",
        "broadcast_object_list",
        "reduce",
        "reduce_scatter",
        "reduce_scatter_tensor",
        "gather",
        "gather_object",
        "scatter",
        "scatter_object_list",
        "all_to_all",
        "all_to_all_single",
        "new_group",
        "new_subgroups",
        "new_subgroups_by_enumeration",
    }
)

#: Functions of ``torch.distributed`` (their functional forms included) whose result is
#: this rank's own share: a shard, a piece scattered or exchanged, a message received.
PER_RANK_RESULTS = frozenset(
    {
        "reduce_scatter",
        "reduce_scatter_tensor",
        "all_to_all",
        "all_to_all_single",
        "scatter",
        "recv",
    }
)

#: Functions of libraries over torch.distributed that return what every rank gathered,
#: reduced or was sent: the same on every rank (by qualified name).
AGREEING_LIBRARY_FUNCTIONS = frozenset(
    {
        *(
            f"accelerate.utils{module}.{name}"
            for module in ("", ".operations")
            for name in ("gather", "gather_object", "reduce", "broadcast")
        ),
        "composer.utils.dist.all_gather",
        "composer.utils.dist.all_gather_object",
    }
)

#: Group-creating calls: every rank must make them, in the same order.
GROUP_CREATORS = frozenset({"new_group", "new_subgroups", "new_subgroups_by_enumeration"})
#: ``init_device_mesh`` makes the process groups of its mesh: every rank must call it.
DEVICE_MESH_CREATORS = frozenset(
    {"torch.distributed.device_mesh.init_device_mesh", "torch.distributed.init_device_mesh"}
)
#: The names the analysis core gives the collectives that create process groups.
GROUP_CREATIONS = GROUP_CREATORS | {"init_device_mesh"}

TORCH_DIST_MODULES = (
    "torch.distributed",
    "torch.distributed.distributed_c10d",
    "deepspeed.comm",
    "deepspeed.comm.comm",
)

#: Distributed checkpointing and FSDP full state dicts: every rank takes part.
FSDP_CLASS = "torch.distributed.fsdp.FullyShardedDataParallel"
CHECKPOINT_MODULE = "torch.distributed.checkpoint"
_FSDP = FSDP_CLASS
_DCP = CHECKPOINT_MODULE

CHECKPOINT_FUNCTIONS: dict[str, str] = {
    f"{_DCP}.save": f"{_DCP}.save",
    f"{_DCP}.async_save": f"{_DCP}.async_save",
    f"{_DCP}.save_state_dict": f"{_DCP}.save_state_dict",
    f"{_DCP}.state_dict_saver.save": f"{_DCP}.save",
    f"{_DCP}.state_dict_saver.async_save": f"{_DCP}.async_save",
    f"{_DCP}.state_dict.get_state_dict": f"{_DCP}.state_dict.get_state_dict",
    f"{_DCP}.state_dict.get_model_state_dict": f"{_DCP}.state_dict.get_model_state_dict",
    f"{_DCP}.state_dict.get_optimizer_state_dict": f"{_DCP}.state_dict.get_optimizer_state_dict",
    f"{_FSDP}.full_optim_state_dict": "FSDP.full_optim_state_dict",
    f"{_FSDP}.optim_state_dict": "FSDP.optim_state_dict",
    "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel"
    ".full_optim_state_dict": "FSDP.full_optim_state_dict",
}

#: FSDP calls that all-gather parameters.
FSDP_COLLECTIVES: dict[str, str] = {
    f"{_FSDP}.summon_full_params": "FSDP.summon_full_params",
    "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel"
    ".summon_full_params": "FSDP.summon_full_params",
}

#: Reads of a model's (or its optimizer's) full state dict: collectives only once the
#: model is sharded (on plain tensors they gather nothing). The model comes first.
STATE_DICT_READS = frozenset(
    {
        f"{_DCP}.state_dict.get_state_dict",
        f"{_DCP}.state_dict.get_model_state_dict",
        f"{_DCP}.state_dict.get_optimizer_state_dict",
        "FSDP.full_optim_state_dict",
        "FSDP.optim_state_dict",
    }
)
#: Calls that shard the model they are given (FSDP1 and FSDP2).
SHARDING_WRAPPERS = frozenset(
    {
        _FSDP,
        "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
        "torch.distributed.fsdp.fully_shard",
        "torch.distributed.fsdp._fully_shard.fully_shard",
        "torch.distributed._composable.fsdp.fully_shard",
        "torch.distributed._composable.fsdp.fully_shard.fully_shard",
    }
)

#: The classes a model is wrapped in for data parallelism, by qualified name: the model
#: it returns synchronises in forward (its buffers, unless ``broadcast_buffers=False``)
#: and in backward (its gradients).
DDP_WRAPPERS = frozenset(
    {
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.parallel.distributed.DistributedDataParallel",
        "torch.nn.DistributedDataParallel",
    }
)
#: Lightning's DDP strategy classes (``find_unused_parameters`` is one of their options).
LIGHTNING_DDP_STRATEGIES = frozenset(
    {
        "lightning.pytorch.strategies.DDPStrategy",
        "lightning.pytorch.strategies.ddp.DDPStrategy",
        "pytorch_lightning.strategies.DDPStrategy",
        "pytorch_lightning.strategies.ddp.DDPStrategy",
        "lightning.fabric.strategies.DDPStrategy",
        "lightning_fabric.strategies.DDPStrategy",
    }
)
LIGHTNING_TRAINERS = frozenset(
    {
        "lightning.Trainer",
        "lightning.pytorch.Trainer",
        "lightning.pytorch.trainer.Trainer",
        "lightning.pytorch.trainer.trainer.Trainer",
        "pytorch_lightning.Trainer",
        "pytorch_lightning.trainer.Trainer",
        "pytorch_lightning.trainer.trainer.Trainer",
    }
)
#: Lightning strategy names that mean DDP with ``find_unused_parameters=False``.
DDP_STRATEGY_NAMES = frozenset(
    name + suffix
    for name in ("ddp", "ddp_spawn", "ddp_fork", "ddp_notebook")
    for suffix in ("", "_find_unused_parameters_false")
)
#: Tensor-parallel plans applied to a model in place.
PARALLELIZE_FUNCTIONS = frozenset(
    {
        "torch.distributed.tensor.parallel.parallelize_module",
        "torch.distributed.tensor.parallel.api.parallelize_module",
    }
)
#: Calls that choose this process's GPU (or make only one visible).
DEVICE_CHOICES = frozenset(
    {
        "torch.cuda.set_device",
        "torch.cuda.device",
        "torch.accelerator.set_device_index",
        "torch.accelerator.set_device_idx",
        "torch.set_default_device",
    }
)
#: The classes of framework objects whose methods communicate.
ACCELERATE_CLASSES = frozenset(
    {"accelerate.Accelerator", "accelerate.accelerator.Accelerator", "accelerate.PartialState"}
)
FABRIC_CLASSES = frozenset(
    {"lightning.Fabric", "lightning.fabric.Fabric", "lightning_fabric.Fabric"}
)
_LIGHTNING_PACKAGES = ("lightning.pytorch", "pytorch_lightning", "lightning")
#: Dotted prefixes of the APIs that start or join a process group, or wrap a model for
#: one: a program that uses none of them runs in one process. A query or a collective
#: (``get_rank``, ``is_initialized``, ``all_gather``, ``barrier``, accelerate's
#: ``gather``, ``detectron2.utils.comm``) starts nothing: a model module that gathers
#: under ``if dist.is_initialized():`` runs in whatever program imports it.
#:
#: - torch: ``init_process_group`` (``distributed_c10d``), ``init_device_mesh`` (which
#:   calls it), ``rpc.init_rpc``, the launchers (``torch.distributed.run``/``launch``,
#:   ``elastic``, ``launcher.elastic_launch``) and ``torch.multiprocessing.spawn`` /
#:   ``start_processes``; wrapping (DDP, FSDP and ``fully_shard``, ``parallelize_module``,
#:   pipelining, ``ZeroRedundancyOptimizer``, ``SyncBatchNorm``) is evidence of intent
#:   for a module's own use, not a start (``GROUP_WRAPPERS``).
#: - DeepSpeed's ``initialize`` and ``init_distributed`` (``initialize`` calls it; so does
#:   ``zero.Init``), its launcher; accelerate's ``Accelerator`` and ``PartialState`` /
#:   ``AcceleratorState`` (their ``__init__`` calls ``init_process_group`` under a
#:   launcher), ``notebook_launcher``; Lightning's ``Trainer`` (its default
#:   ``devices="auto"`` takes every visible GPU and starts DDP itself), its CLI,
#:   ``Fabric``, ``LightningLite`` (its predecessor) and the strategies (``DDPStrategy``);
#:   the Hugging Face ``Trainer`` and ``TrainingArguments`` (under ``torchrun`` or
#:   ``accelerate launch`` they start the group themselves: the launcher is outside the
#:   code); and the starters of Horovod, ColossalAI, Megatron, apex, mmcv/mmengine,
#:   timm, detectron2, fairseq and ignite.
GROUP_STARTERS = (
    *(
        f"torch.distributed.{name}"
        for name in (
            "init_process_group",
            "distributed_c10d.init_process_group",
            "init_device_mesh",
            "device_mesh.init_device_mesh",
            "rpc.init_rpc",
            "run",
            "launch",
            "launcher",
            "elastic",
            "fsdp",
            "_composable.fsdp",
            "_composable.replicate",
            "tensor.parallel.parallelize_module",
            "tensor.parallel.api.parallelize_module",
            "pipelining",
            "optim.ZeroRedundancyOptimizer",
            "optim.zero_redundancy_optimizer",
        )
    ),
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed",
    "torch.nn.DistributedDataParallel",
    "torch.nn.SyncBatchNorm",
    "torch.nn.modules.batchnorm.SyncBatchNorm",
    "torch.multiprocessing.spawn",
    "torch.multiprocessing.start_processes",
    "deepspeed.initialize",
    "deepspeed.init_distributed",
    "deepspeed.comm.init_distributed",
    "deepspeed.comm.comm.init_distributed",
    "deepspeed.zero.Init",
    "deepspeed.launcher",
    *ACCELERATE_CLASSES,
    "accelerate.accelerator",
    "accelerate.state",
    "accelerate.AcceleratorState",
    "accelerate.notebook_launcher",
    "accelerate.launchers",
    *(f"{package}.Trainer" for package in _LIGHTNING_PACKAGES),
    *(f"{package}.trainer" for package in _LIGHTNING_PACKAGES),
    *(f"{package}.cli" for package in _LIGHTNING_PACKAGES),
    *(f"{package}.strategies" for package in _LIGHTNING_PACKAGES),
    "pytorch_lightning.utilities.cli",
    "pytorch_lightning.lite",
    *FABRIC_CLASSES,
    "lightning.fabric.fabric",
    "lightning.fabric.strategies",
    "lightning_fabric.fabric",
    "lightning_fabric.strategies",
    *(f"horovod.{name}.init" for name in ("torch", "tensorflow", "keras", "tensorflow.keras")),
    "horovod.torch.DistributedOptimizer",
    "horovod.run",
    *(
        f"colossalai.{name}"
        for name in ("launch", "launch_from_torch", "launch_from_slurm", "launch_from_openmpi")
    ),
    "colossalai.initialize",
    "colossalai.booster",
    "megatron.initialize",
    "megatron.training",
    "megatron.core.parallel_state.initialize_model_parallel",
    "megatron.core.distributed",
    *(
        f"apex.parallel.{name}"
        for name in (
            "DistributedDataParallel",
            "SyncBatchNorm",
            "convert_syncbn_model",
            "distributed",
        )
    ),
    "transformers.Trainer",
    "transformers.Seq2SeqTrainer",
    "transformers.TrainingArguments",
    "transformers.Seq2SeqTrainingArguments",
    "transformers.trainer",
    "transformers.training_args",
    "trl",
    "mmengine.dist.init_dist",
    "mmengine.runner",
    "mmengine.model.MMDistributedDataParallel",
    "mmcv.runner.init_dist",
    "mmcv.runner.dist_utils.init_dist",
    "mmcv.parallel.MMDistributedDataParallel",
    "timm.utils.init_distributed_device",
    "timm.utils.distributed.init_distributed_device",
    "detectron2.engine.launch",
    "detectron2.engine.create_ddp_model",
    "detectron2.engine.defaults.create_ddp_model",
    *(
        f"fairseq.{module}.{name}"
        for module in ("distributed", "distributed.utils", "distributed_utils")
        for name in ("call_main", "distributed_init")
    ),
    *(f"ignite.distributed.{name}" for name in ("Parallel", "initialize", "spawn", "auto_model")),
)
#: The starters above that wrap a model or an optimizer for a group someone else started
#: (DDP, FSDP, ``SyncBatchNorm``, ZeRO, Horovod's optimizer, apex's and mmcv's wrappers):
#: they need an initialised group to run, so a program that reaches one and no code
#: that starts or joins a group never runs that code (``if world_size > 1: model =
#: DDP(model)`` with nothing that calls ``init_process_group``: the wrap would raise).
GROUP_WRAPPERS = frozenset(
    {
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.parallel.distributed",
        "torch.nn.DistributedDataParallel",
        "torch.nn.SyncBatchNorm",
        "torch.nn.modules.batchnorm.SyncBatchNorm",
        "torch.distributed.fsdp",
        "torch.distributed._composable.fsdp",
        "torch.distributed._composable.replicate",
        "torch.distributed.tensor.parallel.parallelize_module",
        "torch.distributed.tensor.parallel.api.parallelize_module",
        "torch.distributed.pipelining",
        "torch.distributed.optim.ZeroRedundancyOptimizer",
        "torch.distributed.optim.zero_redundancy_optimizer",
        "horovod.torch.DistributedOptimizer",
        *(
            f"apex.parallel.{name}"
            for name in ("DistributedDataParallel", "SyncBatchNorm", "convert_syncbn_model")
        ),
        "megatron.core.distributed",
        "mmengine.model.MMDistributedDataParallel",
        "mmcv.parallel.MMDistributedDataParallel",
        "detectron2.engine.create_ddp_model",
        "detectron2.engine.defaults.create_ddp_model",
        "ignite.distributed.auto_model",
    }
)
#: Dotted prefixes of every API of distributed training: the starters above, and the
#: queries and collectives (``torch.distributed`` whole, accelerate's ``gather``,
#: ``detectron2.utils.comm`` ...). A script that uses one itself is written for a launcher
#: (its group may start in a helper of its own that an import does not resolve to).
#: ``torch.multiprocessing`` is not one beyond its starters (``spawn``,
#: ``start_processes``): its start method, queues, pools and shared memory are Python's
#: ``multiprocessing`` and start no group.
DISTRIBUTED_APIS = (
    *GROUP_STARTERS,
    "torch.distributed",
    "deepspeed",
    "accelerate.utils.operations",
    *(f"accelerate.utils.{name}" for name in ("gather", "gather_object", "reduce", "broadcast")),
    "lightning.fabric",
    "lightning_fabric",
    "horovod",
    "colossalai",
    "megatron",
    "apex.parallel",
    "mmengine.dist",
    "mmcv.runner",
    "timm.utils.distributed",
    "timm.utils.distribute_bn",
    "timm.utils.reduce_tensor",
    "detectron2.utils.comm",
    "fairseq.distributed",
    "fairseq.distributed_utils",
    "ignite.distributed",
)
#: Horovod's collectives: each blocks the host until its result exists.
HOROVOD_COLLECTIVES = frozenset(
    f"horovod.torch.{name}"
    for name in ("allgather", "allreduce", "broadcast", "alltoall", "grouped_allreduce")
)
#: Library helpers that communicate the values they are handed and do nothing else (no
#: forward, no optimizer): ``detectron2.utils.comm.reduce_dict(loss_dict)``, timm's
#: ``reduce_tensor``, mmengine's ``dist.all_reduce_dict``, fairseq's ``all_reduce_dict``,
#: ignite's ``idist.all_reduce``, Horovod's and DeepSpeed's collectives (prefixes of
#: their dotted names; the queue's view of them is ``dist.all_reduce(loss)``'s).
COMMUNICATION_HELPERS = (
    "detectron2.utils.comm.",
    "timm.utils.distributed.",
    "timm.utils.reduce_tensor",
    "timm.utils.distribute_bn",
    "mmengine.dist.",
    "mmcv.runner.dist_utils.all_reduce",
    "fairseq.distributed_utils.all_",
    "fairseq.distributed.utils.all_",
    "ignite.distributed.all_",
    "ignite.distributed.broadcast",
    *sorted(HOROVOD_COLLECTIVES),
    "deepspeed.comm.all_",
    "deepspeed.comm.reduce",
    "deepspeed.comm.broadcast",
)


def is_communication_helper(qualified: str | None) -> bool:
    """Whether a qualified call name is one of ``COMMUNICATION_HELPERS``."""
    return qualified is not None and qualified.startswith(COMMUNICATION_HELPERS)


#: Returns the DeepSpeed engine first (``engine, optimizer, _, _ = deepspeed.initialize(...)``).
DEEPSPEED_INITIALIZE = "deepspeed.initialize"
#: Backward calls that are not a method of the loss.
BACKWARD_FUNCTIONS = frozenset({"torch.autograd.backward"})
#: Methods whose call runs a backward pass (``loss.backward()``,
#: ``accelerator.backward(loss)``, Lightning's ``manual_backward``).
BACKWARD_METHODS = frozenset({"backward", "manual_backward"})

#: Function names that read the rank wherever they come from (``get_rank()``,
#: ``is_global_rank_zero()``, a project's own ``get_local_rank()``).
RANK_FUNCTION_NAMES = frozenset(
    {
        "get_rank",
        "get_local_rank",
        "get_global_rank",
        "is_global_rank_zero",
        "is_rank_zero",
        "get_node_local_rank",
    }
)

#: Attribute or variable names that hold a rank or a per-rank truth value.
RANK_ATTRIBUTES = frozenset(
    {
        "rank",
        "global_rank",
        "local_rank",
        "node_rank",
        "world_rank",
        "is_global_zero",
        "is_local_zero",
        "is_main_process",
        "is_local_main_process",
        "is_last_process",
        "process_index",
        "local_process_index",
    }
)
#: The libraries' spellings of the rank number (not a per-rank truth value).
RANK_NUMBER_ATTRIBUTES = frozenset(name for name in RANK_ATTRIBUTES if not name.startswith("is_"))

#: Attributes that hold the (data-parallel) world size in the libraries' own spelling:
#: torch's and Lightning's ``world_size``, ``DistributedSampler.num_replicas``,
#: accelerate's ``num_processes``, Megatron's and NeMo's ``data_parallel_size``.
WORLD_SIZE_ATTRIBUTES = frozenset(
    {"world_size", "num_replicas", "num_processes", "data_parallel_size"}
)
#: Functions that return the world size (``torch.distributed``, ``deepspeed.comm``,
#: Megatron's ``parallel_state``), by their last name as ``RANK_FUNCTION_NAMES``.
WORLD_SIZE_FUNCTION_NAMES = frozenset({"get_world_size", "get_data_parallel_world_size"})
#: Launcher variables that hold the world size.
WORLD_SIZE_ENV_VARS = frozenset({"WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE"})

#: Calls that ask whether the job runs as several processes at all: a way on which they
#: are false runs one process.
DISTRIBUTED_QUERIES = frozenset(
    {"torch.distributed.is_initialized", "torch.distributed.is_available"}
)

#: Decorators (and wrappers: ``rank_zero_only(fn)(...)``) that run a function on some
#: ranks only: Lightning / lightning_utilities / NeMo, and accelerate's.
RANK_ONLY_DECORATORS = frozenset(
    {
        "rank_zero_only",
        "on_main_process",
        "on_local_main_process",
        "on_last_process",
        "on_process",
        "on_local_process",
    }
)

#: Of those decorators, the ones that run their function on global rank 0 alone.
GLOBAL_ZERO_DECORATORS = frozenset({"rank_zero_only", "on_main_process"})
#: Rank spellings that read the rank within a node (or the node itself): a test of one
#: lets a rank of every node through, never global rank 0 alone.
LOCAL_RANK_SPELLINGS = frozenset(
    {
        "local_rank",
        "node_rank",
        "is_local_zero",
        "is_local_main_process",
        "local_process_index",
        "get_local_rank",
        "get_node_local_rank",
        "LOCAL_RANK",
        "SLURM_LOCALID",
        "NODE_RANK",
        "GROUP_RANK",
    }
)

RANK_ENV_VARS = frozenset(
    {
        "RANK",
        "LOCAL_RANK",
        "SLURM_PROCID",
        "SLURM_LOCALID",
        "OMPI_COMM_WORLD_RANK",
        "GROUP_RANK",
        "NODE_RANK",
    }
)

#: Calls that look at the file system: shared or not, each rank asks at its own moment.
FILE_CALLS = frozenset(
    {
        "os.path.exists",
        "os.path.isfile",
        "os.path.isdir",
        "os.path.getsize",
        "os.path.getmtime",
        "os.listdir",
        "os.scandir",
        "glob.glob",
    }
)

#: The arguments of torch.distributed's collectives that every rank must pass alike:
#: (what it is, its position or None when keyword-only, its keyword). "root" is the
#: sending or receiving rank, "op" the reduction, "group" the process group, "tensor"
#: a tensor (or a list of tensors: its length and its tensors) whose shape and dtype
#: every rank must match, "length" a list of tensors whose length (one per rank) every
#: rank must match while its tensors' sizes may differ, "split" split sizes that let
#: the tensors' shapes differ (their length, one per rank, must still match), "members"
#: the ranks of a group being made (every rank makes every group, with the same list:
#: groups are named by the order they are made in, unless made with
#: ``use_local_synchronization=True``, ``LOCALLY_SYNCHRONISED``).
AGREED_ARGUMENTS: dict[str, tuple[tuple[str, int | None, str], ...]] = {
    "broadcast": (
        ("tensor", 0, "tensor"),
        ("root", 1, "src"),
        ("root", None, "group_src"),
        ("group", 2, "group"),
    ),
    "broadcast_object_list": (
        ("root", 1, "src"),
        ("root", None, "group_src"),
        ("group", 2, "group"),
    ),
    "reduce": (
        ("tensor", 0, "tensor"),
        ("root", 1, "dst"),
        ("root", None, "group_dst"),
        ("op", 2, "op"),
        ("group", 3, "group"),
    ),
    "all_reduce": (("tensor", 0, "tensor"), ("op", 1, "op"), ("group", 2, "group")),
    "all_reduce_coalesced": (("op", 1, "op"), ("group", 2, "group")),
    "reduce_scatter": (
        ("tensor", 0, "output"),
        ("tensor", 1, "input_list"),
        ("op", 2, "op"),
        ("group", 3, "group"),
    ),
    "reduce_scatter_tensor": (
        ("tensor", 0, "output"),
        ("tensor", 1, "input"),
        ("op", 2, "op"),
        ("group", 3, "group"),
    ),
    "all_gather": (("tensor", 0, "tensor_list"), ("tensor", 1, "tensor"), ("group", 2, "group")),
    "all_gather_into_tensor": (
        ("tensor", 0, "output_tensor"),
        ("tensor", 1, "input_tensor"),
        ("group", 2, "group"),
    ),
    "all_gather_object": (("group", 2, "group"),),
    "all_gather_coalesced": (("group", 2, "group"),),
    "gather": (("root", 2, "dst"), ("root", None, "group_dst"), ("group", 3, "group")),
    "gather_object": (("root", 2, "dst"), ("root", None, "group_dst"), ("group", 3, "group")),
    "scatter": (("root", 2, "src"), ("root", None, "group_src"), ("group", 3, "group")),
    "scatter_object_list": (("root", 2, "src"), ("root", None, "group_src"), ("group", 3, "group")),
    "all_to_all_single": (
        ("tensor", 0, "output"),
        ("tensor", 1, "input"),
        ("split", 2, "output_split_sizes"),
        ("split", 3, "input_split_sizes"),
        ("group", 4, "group"),
    ),
    "all_to_all": (
        ("length", 0, "output_tensor_list"),
        ("length", 1, "input_tensor_list"),
        ("group", 2, "group"),
    ),
    "barrier": (("group", 0, "group"),),
    "monitored_barrier": (("group", 0, "group"),),
    "new_group": (("members", 0, "ranks"),),
    "new_subgroups_by_enumeration": (("members", 0, "ranks_per_subgroup_list"),),
}
#: The keyword by which a group creator names the group by its members (a hash of the
#: list) and synchronises only them: then each rank may make only its own group.
LOCALLY_SYNCHRONISED = "use_local_synchronization"
#: Collectives whose list only the root passes: the list's (position, keyword), and
#: the root's (position, keyword); a root not given is rank 0.
ROOT_LISTS: dict[str, tuple[tuple[int, str], tuple[int, str]]] = {
    "scatter": ((1, "scatter_list"), (2, "src")),
    "gather": ((1, "gather_list"), (2, "dst")),
}
#: The reduction a collective with an ``op`` applies when it names none.
DEFAULT_REDUCE_OP = "SUM"
#: Exceptions whose handler swallows an out-of-memory or a failed step.
STEP_FAILURES = frozenset(
    {"RuntimeError", "OutOfMemoryError", "Exception", "BaseException", "AcceleratorError"}
)

#: Wrappers that yield the items of their first argument (progress bars).
ITEMS_PRESERVING = frozenset(
    {"tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "tqdm.std.tqdm", "rich.progress.track"}
)
#: Calls whose items count turns: ``range(n)``, ``itertools.count()``, ``trange(n)``.
COUNTERS = frozenset({"range", "itertools.count", "tqdm.trange", "tqdm.auto.trange"})
#: Data loaders by resolved name (PyTorch Geometric's is a torch DataLoader too).
DATA_LOADERS = frozenset(
    {
        "torch.utils.data.DataLoader",
        "torch.utils.data.dataloader.DataLoader",
        "torchdata.stateful_dataloader.StatefulDataLoader",
        # PyTorch Geometric's loader is a torch DataLoader with a graph collate function.
        "torch_geometric.loader.DataLoader",
        "torch_geometric.loader.dataloader.DataLoader",
        "torch_geometric.data.DataLoader",
    }
)
DISTRIBUTED_SAMPLERS = frozenset(
    {
        "torch.utils.data.DistributedSampler",
        "torch.utils.data.distributed.DistributedSampler",
    }
)
#: Positions among DataLoader's positional parameters.
DATALOADER_POSITIONS = {"dataset": 0, "sampler": 3, "num_workers": 5}
#: Position of ``shuffle`` among DistributedSampler's positional parameters.
DISTRIBUTED_SAMPLER_SHUFFLE_POSITION = 3
#: Position of ``seed`` among DistributedSampler's positional parameters.
DISTRIBUTED_SAMPLER_SEED_POSITION = 4

_TORCH_DISTRIBUTED_PREFIXES = (
    "torch.distributed.",
    "torch.distributed.distributed_c10d.",
    "torch.distributed.c10d.",
)


def torch_distributed_function(qualified: str | None) -> str | None:
    """``barrier`` for ``torch.distributed.barrier`` (or its ``distributed_c10d``
    spelling); None for anything outside ``torch.distributed``'s top level. Any
    function, not only collectives (``init_process_group``, ``get_backend``)."""
    if qualified is None:
        return None
    for prefix in _TORCH_DISTRIBUTED_PREFIXES:
        if qualified.startswith(prefix):
            rest = qualified[len(prefix) :]
            if rest.isidentifier():
                return rest
    return None


#: Methods of a module class that run every training step, the ones DDP's wrapper runs
#: as the forward: torch's ``forward``, Lightning's ``training_step``.
MODULE_STEP_METHODS = frozenset({"forward", "training_step"})
