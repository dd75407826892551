"""Which of the project's programs run each module, and what those programs are.

A *program* is a module run as a script: it tests ``__name__ == "__main__"``, loops at
its top level (inside a top-level ``if``, ``with`` or ``try`` too), or calls a function
of its own there (``main()``). What it runs is the module and every project module it
imports, over and over (a package's ``__init__`` with each module inside it). A program
is *distributed* when code its entry reaches in those modules (``group_reach``: a
helper imported and never run starts nothing) starts or joins a process group
(``api.GROUP_STARTERS`` other than the wrappers, DDP, FSDP and ``SyncBatchNorm``, which
need a group something else started:
``init_process_group``, ``init_device_mesh``, ``torch.multiprocessing.spawn``, the
launchers, DeepSpeed's ``initialize``, accelerate's
``Accelerator``, Lightning's ``Trainer`` and ``Fabric``, Horovod's ``init``, the Hugging
Face ``Trainer`` ...), not one that only asks or communicates (``get_rank``,
``is_initialized``, ``all_gather``: a model module that gathers once a group is up runs
in single-process programs too; nor one that only tests a model's type,
``isinstance(model, DDP)``, to unwrap what another program wrapped) or lives beside
them (a ``LightningDataModule``, accelerate's ``set_seed``), or when the script itself
reads any distributed API (``api.DISTRIBUTED_APIS``: its own ``dist.get_rank()`` says it
is written for a launcher, whose group may start in a helper its imports do not resolve
to; an import it never reads says nothing);
it *trains* when one of them calls
``backward()`` or uses an optimizer (``torch.optim``) or a training framework, or when
it does not itself export a model (``torch.onnx``, ``torch.jit.trace``): a program is
taken for one that never trains only on that evidence.

A module every program of which is single-process runs in one process (``alone``): no
peer to stall or to part from; unless it uses a distributed API itself (a rank, a
collective): written for a group, it may run in a program its importers do not show (a
Lightning module a Hydra config names to a ``Trainer``). A module every program of
which is an export script that never trains never runs in a training step
(``untrained``: an export script's model copy), asked only of projects that hold a
training program. A module no program of the project imports (a library's, whose
users' programs lie outside the project) stays unknown.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ddplint.analysis.api import DISTRIBUTED_APIS
from ddplint.code.project.closures import Closures
from ddplint.code.project.summaries import Summary, qualify

#: Dotted prefixes of the APIs of training: optimizers and training frameworks.
TRAINING_APIS = (
    "torch.optim",
    "torch.autograd.backward",
    "torch.cuda.amp.GradScaler",
    "torch.amp.GradScaler",
    "timm.optim",
    "timm.scheduler",
    "apex.optimizers",
    "bitsandbytes.optim",
    "transformers.AdamW",
    "transformers.optimization",
    "transformers.get_scheduler",
    "transformers.get_linear_schedule_with_warmup",
    "transformers.get_cosine_schedule_with_warmup",
    "deepspeed",
    "accelerate",
    "lightning",
    "pytorch_lightning",
    "transformers.Trainer",
    "transformers.Seq2SeqTrainer",
    "transformers.trainer",
    "trl",
    "peft",
    "mmcv.runner",
    "mmengine.runner",
    "mmdet.apis",
    "mmseg.apis",
    "mmdet3d.apis",
    "mmpose.apis",
    "detectron2.engine",
    "fairseq",
    "ignite.engine",
    "composer",
)
#: Dotted prefixes of the APIs that export a model: traced or written out for another
#: runtime.
EXPORT_APIS = (
    "torch.onnx",
    "torch.jit.trace",
    "torch.jit.save",
    "torch.export",
    "onnx",
    "onnxruntime",
    "tensorrt",
    "coremltools",
    "openvino",
)


#: The folder a ``src/`` layout keeps its modules in (``index.module_name`` strips it).
SOURCE_FOLDER = "src"
#: The project module an import of a name in a module reads (``ProjectIndex.resolve_module``):
#: an absolute name resolves to the module of that name or to the one of that name inside
#: the importer's folder (a script's sibling), never to another.
Resolve = Callable[[str, str], str | None]
#: What a whole-project question reads of one module, resolved (JSON data, kept with the
#: module's links: ``ProjectIndex.link``).
Part = dict[str, Any]


class GroupStarts(Protocol):
    """Which modules hold code that starts a process group, and whether running the
    top levels of some modules (a program's imports) reaches such code
    (``group_reach.GroupReach``)."""

    starting_modules: frozenset[str]

    def starts_group(self, modules: Iterable[str]) -> bool: ...


@dataclass(frozen=True)
class ProgramRoles:
    """Modules that run only in single-process programs, and modules no training
    program runs."""

    alone: frozenset[str]
    untrained: frozenset[str]
    #: The programs that are single-process run as themselves (their ``__main__``
    #: blocks), imported by a distributed program or not.
    alone_programs: frozenset[str] = frozenset()


def program_part(summary: Summary, module: str, resolve: Resolve) -> Part:
    """What ``program_roles`` reads of one module: whether it is a program, trains,
    exports a model, uses a distributed API, and the project modules it imports from no
    folder (``imported_modules``; the index reads them again from a folder that can
    change them: ``FolderSpans``). Falsy parts are left out."""
    dotted = _dotted_names(summary)
    top = summary.get("top", {})
    part: Part = {
        "program": bool(top.get("program"))
        or _runs_project_code(top.get("script_calls", ()), summary, module, resolve),
        "trains": _uses_any(dotted, TRAINING_APIS) or _calls_backward(summary),
        "exports": _uses_any(dotted, EXPORT_APIS),
        "distributed": _uses_any(_used_names(summary), DISTRIBUTED_APIS),
        "imports": sorted(imported_modules(resolve, module, imported_names(summary), "")),
    }
    return {name: value for name, value in part.items() if value}


def program_roles(
    parts: Mapping[str, Part],
    imports_of: Callable[[str, str], Iterable[str]],
    candidates: Callable[[str], Iterable[str]],
    groups: GroupStarts,
) -> ProgramRoles:
    """The roles of the project's modules (see the module docstring), from each
    module's ``program_part``, the project modules it imports in a program run from a
    folder (``imports_of(module, folder)``), the modules whose imports a folder may
    change (``candidates(folder)``: ``FolderSpans``) and what a program's entry reaches
    (``groups``)."""
    closures = Closures(imports_of)
    programs = [name for name, part in parts.items() if part.get("program")]
    starting = closures.bits(groups.starting_modules)
    trains = closures.bits(name for name, part in parts.items() if part.get("trains"))
    exports = {name for name, part in parts.items() if part.get("exports")}
    reached = distributed_reached = training_reached = 0
    alone_programs: set[str] = set()
    for program in programs:
        folder = program.rpartition(".")[0]
        closure = closures.of(program, folder, closures.bits(candidates(folder)))
        # A program trains unless it shows no training and exports a model itself: a
        # framework this module does not know, or a model its training loads by name
        # (a registry), may train what it imports.
        training = bool(closure & trains) or program not in exports
        distributed = bool(parts[program].get("distributed")) or (
            bool(closure & starting) and groups.starts_group(closures.names(closure))
        )
        if not distributed:
            alone_programs.add(program)
        reached |= closure
        distributed_reached |= closure if distributed else 0
        training_reached |= closure if training else 0
    alone = frozenset(
        module
        for module in closures.names(reached & ~distributed_reached)
        if not parts.get(module, {}).get("distributed")
    )
    untrained = frozenset(closures.names(reached & ~training_reached) if training_reached else ())
    return ProgramRoles(alone, untrained, frozenset(alone_programs))


class FolderSpans:
    """The folders a program may run from (the proper prefixes of the project's module
    names) by the name after them: a module's imports read from such a folder differ
    from those read from none only where ``folder.first`` runs inside some module's
    name for the first part of one of its imports (``imported_modules`` tries
    ``folder.name``, which then names no module, as a sibling or under an ancestor)."""

    def __init__(self, modules: Iterable[str]) -> None:
        names = list(modules)
        prefixes = {
            name.rsplit(".", cut)[0] for name in names for cut in range(1, name.count(".") + 1)
        }
        self._before: dict[str, set[str]] = {}
        for span in _spans(names):
            folder, _, last = span.rpartition(".")
            if folder in prefixes:
                self._before.setdefault(last, set()).add(folder)

    def folders(self, names: Iterable[str]) -> list[str]:
        """The folders from which a module's imports of ``names`` (``imported_names``)
        may read other modules than from none (sorted)."""
        found: set[str] = set()
        for first in _first_parts(names):
            found |= self._before.get(first, set())
        return sorted(found)


def _spans(modules: Iterable[str]) -> set[str]:
    """Every run of two or more consecutive parts of a module's dotted name."""
    found: set[str] = set()
    for module in modules:
        parts = module.split(".")
        for start in range(len(parts) - 1):
            for end in range(start + 2, len(parts) + 1):
                found.add(".".join(parts[start:end]))
    return found


def _first_parts(names: Iterable[str]) -> set[str]:
    """The first part of each absolute name imported (``torch`` of ``torch.nn``)."""
    return {value.partition(".")[0] for value in names if not value.startswith(".")}


def imported_names(summary: Summary) -> set[str]:
    """Every dotted name a module's imports read, at any depth: the summary's
    ``imports`` (one per local name) with the reach part's (an import bound again to
    the same local name, one inside a function, ``from m import *``)."""
    reach = summary.get("reach", {})
    return {
        *summary.get("imports", {}).values(),
        *reach.get("imported", ()),
        *reach.get("star", ()),
    }


def imported_modules(
    resolve: Resolve, importer: str, names: Iterable[str], folder: str
) -> set[str]:
    """The project modules ``importer`` imports by ``names`` (``imported_names``; the
    packages around them too) in a program run from ``folder``: the script's folder is
    on ``sys.path``, a package's or not, so any module the program runs imports that
    folder's modules by their plain names too."""
    found: set[str] = set()
    for value in sorted(names):
        parts = value.split(".")
        for cut in range(len(parts), 0, -1):
            name = ".".join(parts[:cut])
            module = resolve(name, importer)
            if module is None and folder and not name.startswith("."):
                module = resolve(f"{folder}.{name}", importer)
            if module is None and name.startswith(f"{SOURCE_FOLDER}."):
                # ``src/`` without ``__init__``: the index names its modules without it.
                module = resolve(name[len(SOURCE_FOLDER) + 1 :], importer)
            if module is not None:
                found.add(module)
                package = module.rpartition(".")[0]
                while package:
                    found.add(package)
                    package = package.rpartition(".")[0]
                break
    return found


def _dotted_names(summary: Summary) -> set[str]:
    """The library names a module imports or reads, fully qualified."""
    return set(summary.get("imports", {}).values()) | _used_names(summary)


def _runs_project_code(
    calls: Iterable[str], summary: Summary, module: str, resolve: Resolve
) -> bool:
    """Whether a top-level statement calls a function or class of another project
    module (``script_calls``: ``loop.f()``, a ``Trainer`` it made and drives): a
    script that runs the project's code when run, a program."""
    imports: dict[str, str] = summary.get("imports", {})
    for called in calls:
        qualified = qualify(called, imports)
        if qualified is None or "." not in qualified:
            continue
        owner = qualified.rpartition(".")[0]
        while owner:
            if resolve(owner, module) is not None:
                return True
            owner = owner.rpartition(".")[0]
    return False


def _used_names(summary: Summary) -> set[str]:
    """The library names a module reads, fully qualified: an import nothing reads
    (``DistributedDataParallel`` imported beside the model and never called) is none."""
    imports: dict[str, str] = summary.get("imports", {})
    found: set[str] = set()
    for use in summary.get("uses", ()):
        qualified = qualify(use.rpartition(":")[2], imports)
        if qualified is not None:
            found.add(qualified)
    return found


def _uses_any(names: set[str], prefixes: tuple[str, ...]) -> bool:
    """Whether a name is one of ``prefixes`` or inside one (``torch.optim.SGD``)."""
    wanted = frozenset(prefixes)
    return any(head in wanted for name in names for head in _dotted_prefixes(name))


def _dotted_prefixes(name: str) -> Iterator[str]:
    """``name`` and each of its dotted prefixes (``a.b.c``: ``a``, ``a.b``, ``a.b.c``)."""
    cut = name.find(".")
    while cut != -1:
        yield name[:cut]
        cut = name.find(".", cut + 1)
    yield name


def _calls_backward(summary: Summary) -> bool:
    return bool(summary.get("top", {}).get("backward"))
