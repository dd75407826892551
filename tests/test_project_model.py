"""The project model (``ddplint.code.project``): module summaries, linking, fixpoints,
and what the rules gain from them on small multi-file projects (``fixtures/project``)."""

from __future__ import annotations

import shutil
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from ddplint.code.project.encoding import decode_facts, encode_facts, informs_rules
from ddplint.code.project.facts import (
    NO_FACTS,
    Agreement,
    FileFacts,
    NameFacts,
    OwnFunctionFacts,
    ReachedCollective,
    Switch,
)
from ddplint.code.project.group_reach import GroupReach
from ddplint.code.project.index import ProjectIndex, module_name
from ddplint.code.project.module_summary import summarize
from ddplint.code.project.programs import _uses_any, imported_modules, imported_names
from ddplint.code.project.reach import imported, unseen_reach
from ddplint.engine import RunResult, lint_paths
from ddplint.rules import all_rules
from ddplint.settings import LintOptions, Settings

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "project"
DEFAULT_RULES = tuple(sorted(code for code in all_rules() if code.startswith("DDP")))

#: Per fixture project: the (file, line, rule) findings expected, and a piece of the
#: message that names the chain across files.
EXPECTED = {
    # `rank` is a parameter nothing shows to hold the rank (its name decides nothing):
    # the analysis core that DDP201 asks sees no rank test there.
    "zero_first": (set(), ""),
    "save_checkpoint": (
        {("train_bad.py", 9, "DDP201")},
        "through `utils.save_checkpoint` -> `utils._wait_for_all` (utils.py:11)",
    ),
    "distr_object": (
        {("src/project/train_bad.py", 5, "DDP201")},
        "it reads the rank (`distr.is_global_main`, line 5)",
    ),
    "rank_helpers": (
        {("train_bad.py", 6, "DDP201"), ("train_bad.py", 13, "DDP201")},
        "it reads the rank (`self.is_rank_zero`, line 13)",
    ),
    "shadowed_save": (set(), ""),
    "device_elsewhere": ({("train_bad.py", 7, "DDP501")}, ""),
    # helpers of another module that all-reduce their argument in place, return a
    # reduced dict or a value broadcast from rank 0: a test on what they agreed is no
    # parting (train_good.py); a helper that only waits at a barrier agrees nothing.
    # The LibCST rule that reported it (DDP210) is retired; DDP219 below reports it.
    "agreed_elsewhere": (set(), ""),
    # `mark_unfinished(path, barrier_after=True)` switches its barrier on (flagged on rank 0
    # alone), and `load_examples(paths, evaluate=True)` switches its all_gather off (`if not
    # evaluate`): quiet on rank 0 alone; the default (`evaluate=False`) there is flagged.
    "opt_in_barrier": (
        {("train_bad.py", 7, "DDP201"), ("evaluate_bad.py", 7, "DDP201")},
        "(markers.py:10)",
    ),
    # validation(model, rank, loader) returns an all-reduced loss: the rank argument
    # does not make a condition on it rank-dependent; `rank == 0` does.
    "uniform_result": ({("train_bad.py", 10, "DDP203")}, ""),
    # `setup()` creates the NCCL group and its only caller chooses the GPU next: quiet.
    # `setup_any()` is also called by a script that never chooses one: flagged there.
    "device_by_caller": ({("dist_setup.py", 12, "DDP501")}, ""),
    # `prepare(model)` shards its argument two calls down: a full state-dict read
    # before it sees a plain model (quiet), one after it gathers shards (flagged).
    "shard_later": ({("train_bad.py", 11, "DDP203")}, ""),
    # `train_bad.py` wraps the model in DDP and hands it to functions of other modules:
    # their forward after a rank-0-only return, or two calls down under `if rank == 0`,
    # is flagged there; the bare model (before wrapping, `.module`) and a call that
    # switches the forward off (`train=False`) are not.
    "ddp_model_elsewhere": (
        {("evaluation.py", 9, "DDP213"), ("loops.py", 17, "DDP213")},
        "(a DistributedDataParallel model its callers pass in)",
    ),
    # `train_bad.py` passes its local rank to `Trainer(model, device_id)` and, by
    # keyword, to `evaluate(..., local_index=...)`: tests of those parameters (and of
    # `self.device_id`) are rank tests there; `Reporter`'s `gpu`, passed a number, is not.
    # `src/__init__.py` makes `src` a package the scripts import by that name.
    # `load_step(model, rank, path)` returns the step in the checkpoint's name (the rank
    # only picks who prints): a loop from it is the same on every rank (train_good.py);
    # `staggered_step(rank, path)` adds the rank, and a counter only rank 0 advances
    # decides a barrier (train_bad.py): the loop's trip count, DDP219's below.
    "step_from_checkpoint": (
        {("train_bad.py", 17, "DDP211")},
        "",
    ),
    # `resume(args, model, logger, rank, n)` returns a tuple whose items read their own
    # arguments: the start step reads the checkpoint and `n`, not the rank (only logged),
    # so a periodic test on the step is the same on every rank (train_good.py); the
    # offset item reads the rank, and a test on it decides an all-reduce (train_bad.py).
    "items_from_checkpoint": (
        {("train_bad.py", 13, "DDP201")},
        "",
    ),
    # The script binds the rank from the tuple a helper of the `tools` package returns
    # (`rank, local_rank, world_size = init_distributed(args)`) and hands it by keyword
    # to `tools.train` (re-exported by the package's `__init__`, beside the submodule of
    # the same name): rank 0's patience `break` skips the epoch's last barrier, and the
    # script's own barrier sits under its rank test. `train_good.py` hands it to a loop
    # that broadcasts the stop and calls its barrier on every rank: quiet.
    "rank_from_setup": (
        {("tools/train.py", 17, "DDP201"), ("train_bad.py", 15, "DDP201")},
        "",
    ),
    "rank_by_caller": (
        {("src/trainer/trainer.py", 11, "DDP201"), ("src/trainer/loops.py", 7, "DDP201")},
        "",
    ),
    # The scripts hand the rank from their top level (under the `__main__` test, read
    # in place: `fit(int(os.environ["LOCAL_RANK"]), ...)`, `Fitter(model,
    # dist.get_rank())`) to a function and a class of another module: rank 0 skips the
    # `else:` barrier of each epoch. `train_good.py` hands the rank to the look-alikes
    # that pair (main process first, a send and its receive) and the process count to
    # a single-process switch: quiet.
    "rank_by_script": (
        {("pipeline/epochs.py", 8, "DDP201"), ("pipeline/epochs.py", 22, "DDP201")},
        "",
    ),
    # `train_bad.py` starts the process group in a helper of another module: its per-step
    # read and its rank-local skip are reported, and so are `steps.py` and `layers.py`,
    # which it runs too. `train_good.py` starts no group, nor does anything it imports (a
    # Lightning data module starts none; `layers.py` gathers only `if dist.is_initialized()`,
    # which starts none either): the same read and skip run in one process, quiet.
    # `lit.py` runs under `train_lightning.py`, whose Lightning `Trainer` may start DDP on
    # every visible GPU: its per-step read is reported. `layers_export.py` is run only by
    # `export.py`, which never trains: its upload is in no training step.
    # A read before the backward after a call that may end with a wait: a loss whose
    # forward indexes with a device mask or whose matcher (a third module) asks for
    # nonzero indices, a model whose forward reads a count or uploads a host constant
    # (train_good.py: quiet); the same step with kernels-only look-alikes, and a model
    # whose forward reads a count first and then runs its layer (train_bad.py).
    "waits_in_forward": (
        {
            ("train_bad.py", 21, "DDP102"),
            ("train_bad.py", 31, "DDP102"),
            ("train_bad.py", 46, "DDP102"),
            ("train_bad.py", 56, "DDP102"),
        },
        "",
    ),
    # A DETR-style criterion keeps the matcher its caller hands in (`self.matcher =
    # matcher`, criterion.py) and calls it first: a Hungarian matcher copies its cost
    # matrix to the host for scipy's assignment (no device work after), so the loss read
    # right after the criterion waits for nothing new; handed in made by its class or by
    # a factory of another module (`build_matcher`), or called in the loop itself
    # (train_good.py: quiet). A matcher that stays on the device (train_bad.py): reported.
    "matcher_elsewhere": (
        {
            ("train_bad.py", 21, "DDP102"),
            ("train_bad.py", 31, "DDP102"),
            ("train_bad.py", 42, "DDP102"),
        },
        "",
    ),
    # `loops.train_one_epoch` steps through the scaler every caller hands it, made by
    # `GradScaler()` (train_good.py): its step reads the inf/NaN check on the host, so
    # the loss read after it waits for nothing new (quiet). `train_maybe_scaled` is also
    # handed a project class of its own (train_bad.py): not known to read, reported.
    "scaler_elsewhere": ({("loops.py", 16, "DDP102")}, ""),
    # A DeepSpeed engine's `step()` reads its fp16 overflow flag on the host where the
    # project's configs (a JSON file, a YAML section) enable fp16: the read after it is
    # quiet (the engine `deepspeed.initialize` returns first, given `training_data` or
    # not); with bf16 (and fp16 switched off in another config) it is reported.
    "deepspeed_fp16": (set(), ""),
    "deepspeed_bf16": (
        {("train.py", 12, "DDP102"), ("train_with_data.py", 14, "DDP102")},
        "",
    ),
    # An optimizer an `Accelerator` prepared steps through a GradScaler under fp16
    # mixed precision, which reads its inf/NaN check on the host: fp16 given as a
    # default, an option a training config of the project sets to fp16, or nothing given
    # under an accelerate launch config with fp16: quiet. bf16 given, or an option only
    # the launch config sets to fp16 (the argument wins over it): reported.
    "accelerate_fp16": (set(), ""),
    "accelerate_bf16": ({("train.py", 12, "DDP102"), ("train_options.py", 17, "DDP102")}, ""),
    "programs": (
        {
            ("train_bad.py", 12, "DDP102"),
            ("train_bad.py", 14, "DDP204"),
            ("steps.py", 4, "DDP102"),
            ("layers.py", 8, "DDP240"),
            ("lit.py", 7, "DDP102"),
        },
        "",
    ),
    # `train_bad.py` builds a loader on a shuffling DistributedSampler (on some paths:
    # `sampler if sampler else None`) and hands it to `loops.train`, whose epoch loop
    # walks and trains on it without `set_epoch` (DDP402, at the epoch loop).
    # `train_good.py` hands its loaders to `train_each_epoch` (sets the epoch on the
    # loader's sampler), `fit_in_order` (a sampler with `shuffle=False`) and
    # `score_each_epoch` (walks without training): quiet.
    # The project's only program starts no group: its model module gathers only
    # `if dist.is_initialized()` (no group starts), so its per-step read runs in one
    # process, quiet (`train_bad.py` of `programs`: the same read, a group started).
    "programs_alone": (set(), ""),
    # CenterNet's `_init_paths`: a module the program imports puts `src/lib` on sys.path
    # (`add_path(osp.join(this_dir, "lib"))`), so `from trains.base_trainer import ...`
    # is `src/lib/trains/base_trainer.py`, run by the program's one process (quiet). In
    # `path_roots_group` the folder is `Path(__file__).resolve().parents[1] / "lib"`:
    # `comm.synchronize` (its barrier) is reached under a rank test, the step read runs
    # in a group (reported).
    "path_roots_alone": (set(), ""),
    "path_roots_group": (
        {("tools/train_net.py", 16, "DDP201"), ("lib/engine/loop.py", 7, "DDP102")},
        "through `comm.synchronize`",
    ),
    "loader_elsewhere": ({("loops.py", 2, "DDP402")}, "callers elsewhere in the project"),
    # `samplers.py` makes distributed samplers: a subclass of `DistributedSampler` and a
    # factory returning one (their kinds, ``object_kinds``). `train_bad.py` builds loaders
    # on both and trains on them every epoch without `set_epoch`: both reported at the
    # sampler (the file never spells `DistributedSampler`). `train_good.py` sets both
    # epochs through the loaders' `.sampler`, passes `shuffle=False`, and walks the
    # factory's sampler only to score: quiet.
    "sampler_elsewhere": (
        {("train_bad.py", 7, "DDP402"), ("train_bad.py", 8, "DDP402")},
        "",
    ),
    # `batches.py` defines iterables that never run out (a class whose `__iter__`
    # restarts the loader, a generator looping forever), one that walks the loader
    # once, and wrappers that yield their first argument's items until they end (a
    # prefetcher class, a generator moving batches to the device). An accumulation loop
    # over the endless ones, or over a wrapper of one (a name bound again to the wrapper),
    # has no epoch end and leaves no partial group (`train_good.py`, a subclass of this
    # module included: quiet); over the one-pass wrapper or a wrapper of a plain loader
    # the epoch's last partial group is never stepped (DDP401).
    "endless_elsewhere": (
        {
            ("train_bad.py", 7, "DDP401"),
            ("train_bad.py", 14, "DDP401"),
            ("train_bad.py", 21, "DDP401"),
        },
        "",
    ),
    # Code nothing in the project can run (``code.project.reach``): the same per-step
    # read in `vendor_a/utils.py` (only `gen_output` is imported from it), in
    # `trainer_copy.py` (imported by nothing) and in `plugins/plain.py` (named by
    # nothing) is quiet; in `vendor_b/utils.py` (`vutils.train` and `EpochRunner`
    # called), `loops.py` (a registry dict holds `plain_loop`), `plugins/fancy.py`
    # (`import_module("plugins.fancy")`) and `train_bad.py` (`mp.spawn(worker)`) it
    # is reported. The `new_group` wrapper of `vendor_a/dist_utils.py` is called by
    # nothing: its `init_process_group` timeout reaches every group that can be made
    # (DDP304 quiet); `vendor_b`'s is called (reported).
    "reach": (
        {
            ("vendor_b/utils.py", 8, "DDP102"),
            ("vendor_b/utils.py", 18, "DDP102"),
            ("loops.py", 4, "DDP102"),
            ("plugins/fancy.py", 4, "DDP102"),
            ("train_bad.py", 16, "DDP102"),
            ("vendor_b/dist_utils.py", 10, "DDP304"),
        },
        "",
    ),
    # A module imported by nothing that a Hydra config names (`_target_`) and the
    # program instantiates: a load by a computed name may load any module, reported.
    "reach_hydra": ({("models/loop_trainer.py", 5, "DDP102")}, ""),
    # A module's `__main__` block, run as its own program, starts no group though the
    # distributed `train_ddp.py` imports the module: its self-test loop is one process
    # (a function it calls, one such a function calls, an inline loop under
    # `"__main__" == __name__`). Where that program starts a group itself or in a helper
    # it imports, every rank runs the loop: reported.
    "main_block": (
        {
            ("selftest_dist.py", 20, "DDP102"),
            ("selftest_setup.py", 21, "DDP102"),
            ("train_ddp.py", 12, "DDP501"),
        },
        "",
    ),
    # A helper that starts the group, imported beside the meter a script uses and never
    # run by it: one process (train_one.py); so is a script that only sets Python's
    # multiprocessing start method. The script that runs the helper: reported.
    "group_unreached": ({("train_ddp.py", 14, "DDP102")}, ""),
    # A training loop under a top-level `if` (not `__main__`) runs its script: one
    # process; the same script starting the group under the `if`: reported.
    "loop_in_if": ({("train_ddp.py", 14, "DDP102")}, ""),
    # Objects typed by their allocation in another module, not by their names: a
    # module class through a project base (`Head(Backbone)`, DDP101), an accelerator a
    # factory returns (`booster.backward(loss)`: the loss is the argument, DDP204), an
    # optimizer a factory returns stepped after micro-batches (each pass a step,
    # DDP102), an accelerator every caller hands `fit` (its parameter `booster`,
    # loops.py, DDP204). `Summary(DataModel)` derives from a plain class named like a
    # model: no module, its forward runs no step (train_good.py).
    "object_kinds": (
        {
            ("train_bad.py", 11, "DDP101"),
            ("train_bad.py", 20, "DDP204"),
            ("train_bad.py", 32, "DDP102"),
            ("loops.py", 8, "DDP204"),
        },
        "",
    ),
}

#: The analysis core's question (DDP219) on the same projects, with the project facts
#: handed to it: a value agreed elsewhere, a DDP model a caller in another module hands
#: in, a loop whose trip count a project helper gives the rank. Reported at the root
#: cause, not at the collective. The partings a rank test decides (another module's
#: collective such as `utils.save_checkpoint` or an opt-in barrier its call switches on;
#: rank tests of other modules, `distr.is_global_main`, `self.is_rank_zero`) are
#: DDP201's, at the same place (one finding per root cause).
EXPECTED_CORE = {
    # `comm.handed_back(*values)` communicates but returns what it was handed: rank 0's
    # count decides the loop (DDP211); `comm.broadcast_if_needed(*values)` (train_good.py)
    # returns rank 0's values, and `broadcast_in_place` copies them back into the field.
    # `comm.first_rank_flag` hands back `first_rank_value`'s broadcast result (an agreed
    # result through a chain of helpers: train_good.py quiet); `own_or_first_rank_flag`
    # returns a true flag as it is: rank 0 leaves (train_bad.py:38) and skips the
    # broadcast the others reach (comm.py:61).
    "agreed_elsewhere": {
        ("train_bad.py", 15, "DDP219"),
        ("train_bad.py", 26, "DDP211"),
        ("train_bad.py", 38, "DDP219"),
        ("comm.py", 61, "DDP201"),
    },
    # `run_validation(model, loader, dist.get_rank())`: its `rank` is the caller's rank.
    # The partings at those rank tests skip the DDP forwards DDP213 reports above (one
    # finding per root cause, ``analysis.root_causes``).
    "ddp_model_elsewhere": set(),
    # The core follows the sharding into `prepare` (project facts) and the save into
    # `save_sharded`: the rank partings at the test are DDP219's and DDP201's.
    "shard_later": {("train_bad.py", 10, "DDP219")},
    "uniform_result": {("train_bad.py", 9, "DDP201")},
    "step_from_checkpoint": {("train_bad.py", 7, "DDP219")},
}


def run(root: Path, paths: list[Path], *, use_cache: bool = False) -> RunResult:
    settings = Settings(project_root=root)
    options = LintOptions(selected=DEFAULT_RULES, project_root=str(root))
    return lint_paths([str(p) for p in paths], settings, options, jobs=1, use_cache=use_cache)


def found(result: RunResult, root: Path) -> set[tuple[str, int, str]]:
    return {
        (Path(f.path).resolve().relative_to(root).as_posix(), f.line, f.rule)
        for f in result.findings
    }


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest):
    """A copy of one fixture project in a folder of its own (its own project root)."""
    root = tmp_path / request.param
    shutil.copytree(FIXTURES / request.param, root)
    monkeypatch.chdir(root)
    monkeypatch.setenv("DDPLINT_CACHE_DIR", str(tmp_path / ".cache"))
    return root


@pytest.mark.parametrize("project", sorted(EXPECTED), indirect=True)
def test_cross_module_hazards_fire_and_correct_forms_stay_quiet(project: Path) -> None:
    expected, chain = EXPECTED[project.name]
    result = run(project, [project])
    assert not result.errors
    assert found(result, project) == expected | EXPECTED_CORE.get(project.name, set())
    if chain:
        assert any(chain in f.message for f in result.findings)


@pytest.mark.parametrize("project", sorted(EXPECTED), indirect=True)
def test_a_file_named_alone_gets_the_answer_of_the_whole_tree(project: Path) -> None:
    whole = run(project, [project])
    for path in sorted(project.rglob("train_*.py")):
        alone = run(project, [path])
        relative = path.relative_to(project).as_posix()
        assert found(alone, project) == {f for f in found(whole, project) if f[0] == relative}
        assert sorted(f.message for f in alone.findings) == sorted(
            f.message for f in whole.findings if Path(f.path).resolve() == path
        )


@pytest.mark.parametrize("project", ["loader_elsewhere"], indirect=True)
def test_a_handed_loader_walked_by_a_helper_without_set_epoch(project: Path) -> None:
    # `train_each_epoch` hands its loader on to `one_epoch`, which walks it: one loader
    # (the helper's parameter is not another), covered by the `set_epoch` in the epoch
    # loop; without that call the epoch loop around the helper's call is reported.
    loops = project / "loops.py"
    loops.write_text(
        loops.read_text().replace("        train_loader.sampler.set_epoch(epoch)\n", "")
    )
    result = run(project, [project])
    assert found(result, project) == {("loops.py", 2, "DDP402"), ("loops.py", 12, "DDP402")}
    assert any("`one_epoch` walks it" in f.message for f in result.findings)


@pytest.mark.parametrize("project", ["save_checkpoint"], indirect=True)
def test_cached_findings_follow_an_edit_of_what_the_file_reaches(project: Path) -> None:
    utils = project / "utils.py"
    utils.write_text(utils.read_text().replace("    dist.barrier()\n", "    pass\n"))
    first = run(project, [project], use_cache=True)
    assert found(first, project) == set()
    again = run(project, [project], use_cache=True)
    assert found(again, project) == set() and again.stats.cached == again.stats.files
    utils.write_text(utils.read_text().replace("    pass\n", "    dist.barrier()\n"))
    after = run(project, [project], use_cache=True)
    assert found(after, project) == {("train_bad.py", 9, "DDP201")}
    # train_good.py's facts changed too (its call now reaches a barrier); nothing is stale.
    assert after.stats.cached == 0


MODEL = """\
import lightning.pytorch as pl


class SSLModel(pl.LightningModule):
    def validation_step(self, batch, batch_idx):
        loss = self(batch)
        self.log("val_loss", loss{sync})
        return loss
"""
CONFIG = """\
trainer:
  devices: 4
  callbacks:
    - class_path: lightning.pytorch.callbacks.ModelCheckpoint
      init_args:
        monitor: val_loss
        filename: "{epoch}-{val_loss:.3f}"
"""


@pytest.mark.parametrize("sync", ["", ", sync_dist=True"])
def test_a_yaml_linted_alone_and_the_tree_agree_on_ddp605(
    sync: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DDPLINT_CACHE_DIR", str(tmp_path / ".cache"))
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "train.yaml").write_text(CONFIG)
    (tmp_path / "model.py").write_text(MODEL.format(sync=sync))
    tree = [f for f in run(tmp_path, [tmp_path]).findings if f.rule == "DDP605"]
    alone = run(tmp_path, [tmp_path / "configs" / "train.yaml"]).findings
    assert [(f.rule, f.line, f.message) for f in alone] == [
        (f.rule, f.line, f.message) for f in tree
    ]
    assert len(tree) == (0 if sync else 1)


@pytest.mark.parametrize("project", ["save_checkpoint"], indirect=True)
def test_a_file_named_after_a_tree_run_takes_its_facts_from_the_memo(project: Path) -> None:
    """An unchanged project is not linked again: a file named alone (pre-commit) after a
    run over the same sources reads its facts from the memo, with the same findings."""
    whole = run(project, [project], use_cache=True)
    expected = {f for f in found(whole, project) if f[0] == "train_bad.py"}
    train = project / "train_bad.py"
    original = train.read_text()
    train.write_text(original + "\n")  # a source changed: the file alone links once
    assert found(run(project, [train], use_cache=True), project) == expected

    def no_linking(*_args: object) -> None:
        raise AssertionError("the project was linked again")

    train.write_text(original)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ProjectIndex, "__init__", no_linking)
        assert found(run(project, [train], use_cache=True), project) == expected
        assert found(run(project, [project], use_cache=True), project) == found(whole, project)


def index_of(files: dict[str, str]) -> ProjectIndex:
    return ProjectIndex({path: summarize(text) for path, text in files.items()})


def test_module_names_follow_packages_and_src_layouts() -> None:
    assert module_name("src/pkg/utils.py") == ("pkg.utils", False)
    assert module_name("src/pkg/utils.py", src_is_package=True) == ("src.pkg.utils", False)
    assert index_of({"src/__init__.py": "", "src/a.py": ""}).module_of_path["src/a.py"] == "src.a"
    assert index_of({"src/a.py": ""}).module_of_path["src/a.py"] == "a"
    assert module_name("pkg/__init__.py") == ("pkg", True)
    assert module_name("train.py") == ("train", False)
    assert module_name("configs/a.yaml") is None


def test_relative_imports_and_reexports_resolve() -> None:
    index = index_of(
        {
            "pkg/__init__.py": "from .comm import sync\n",
            "pkg/comm.py": "import torch.distributed as dist\ndef sync():\n    dist.barrier()\n",
            "pkg/sub/__init__.py": "",
            "pkg/sub/run.py": "from ..comm import sync as s\nimport pkg\n",
        }
    )
    assert index.function_key("s", "pkg.sub.run", None) == ("pkg.comm", "sync")
    assert index.function_key("pkg.sync", "pkg.sub.run", None) == ("pkg.comm", "sync")
    assert index.reach[("pkg.comm", "sync")].kind[0] == "torch.distributed.barrier"


def test_a_package_binding_hides_its_submodule_of_the_same_name() -> None:
    # ``from .train import train`` in ``tools/__init__.py``: ``tools.train`` and ``from
    # tools import train`` are the function, as Python's attribute lookup finds it; a
    # package that binds nothing of that name leaves the submodule.
    index = index_of(
        {
            "tools/__init__.py": "from .train import train\nfrom . import other\n",
            "tools/train.py": "def train(rank):\n    return rank\n",
            "tools/other.py": "def other():\n    return 1\n",
            "tools/plain.py": "def plain():\n    return 2\n",
            "run.py": "import tools\nfrom tools import train as t\nfrom tools import plain\n",
        }
    )
    assert index.function_key("tools.train", "run", None) == ("tools.train", "train")
    assert index.function_key("t", "run", None) == ("tools.train", "train")
    assert index.function_key("tools.other.other", "run", None) == ("tools.other", "other")
    assert index.function_key("plain.plain", "run", None) == ("tools.plain", "plain")


def test_the_rank_an_item_of_another_modules_tuple_is_handed_on() -> None:
    # ``rank, local_rank, world = init_distributed(args)`` in one module, ``return rank,
    # local_rank, world_size`` in another: the first two items read the rank, the third
    # does not, and a name bound twice is not followed.
    index = index_of(
        {
            "dist_tools.py": (
                "import os\nimport torch.distributed as dist\n"
                "def init_distributed(args):\n    if not args.distributed:\n"
                "        return 0, 0, 1\n    rank = int(os.environ['RANK'])\n"
                "    local_rank = int(os.environ['LOCAL_RANK'])\n"
                "    world_size = int(os.environ['WORLD_SIZE'])\n"
                "    dist.init_process_group('nccl')\n"
                "    return rank, local_rank, world_size\n"
                "def only_rank():\n    rank = dist.get_rank()\n    return rank\n"
            ),
            "loops.py": (
                "def fit(model, rank=0, world=1):\n    return rank\n"
                "def other(model, rank=0):\n    return rank\n"
                "def third(rank):\n    return rank\n"
            ),
            "run.py": (
                "from dist_tools import init_distributed, only_rank\n"
                "from loops import fit, other, third\n"
                "def run(args):\n    rank, local_rank, world = init_distributed(args)\n"
                "    fit(None, rank=rank, world=world)\n"
                "    again, _, _ = init_distributed(args)\n    again = 0\n"
                "    other(None, again)\n    third(only_rank())\n"
                "    mine = only_rank()\n    third(mine)\n"
            ),
        }
    )
    assert index.rank_parameters[("loops", "fit")] == {1}  # `rank=`; `world=` is no rank
    assert not index.rank_parameters.get(("loops", "other"))  # bound twice: not followed
    assert index.rank_parameters[("loops", "third")] == {0}
    names = index.facts_for("run.py").names
    assert names["init_distributed"].rank_items == (0, 1)
    assert names["only_rank"].rank_test


def test_a_package_import_resolves_under_the_folder_one_project_of_several_runs_from() -> None:
    index = index_of(
        {
            "proj/src/__init__.py": "",
            "proj/src/data/__init__.py": "",
            "proj/src/data/loaders.py": "def make():\n    pass\n",
            "proj/src/tasks/train.py": "from src.data.loaders import make\n",
            "proj/src/tasks/eval.py": "from data.loaders import make\n",
            "proj/tools/run.py": "from src.data.loaders import make\n",
            "other/src/tasks/train.py": "from src.data.loaders import make\n",
        }
    )
    loaders = "proj.src.data.loaders"
    assert index.resolve_module("src.data.loaders", "proj.src.tasks.train") == loaders
    assert index.resolve_module("src.data.loaders", "proj.tools.run") == loaders
    # The nearest folder above that holds the package: `proj/src` for `data`.
    assert index.resolve_module("data.loaders", "proj.src.tasks.eval") == loaders
    # A single name is only a sibling of its script.
    assert index.resolve_module("loaders", "proj.src.tasks.train") is None
    # Another project of the repository has no `src` package of its own.
    assert index.resolve_module("src.data.loaders", "other.src.tasks.train") is None


def test_recursion_ends_and_unknown_receivers_stay_unknown() -> None:
    index = index_of(
        {
            "a.py": "import b\ndef f():\n    b.g()\n",
            "b.py": "import a\ndef g():\n    a.f()\n",
            "c.py": "def h(obj):\n    obj.barrier()\n",
        }
    )
    assert ("a", "f") not in index.reach and ("b", "g") not in index.reach
    assert ("c", "h") not in index.reach


def test_the_rank_follows_arguments_into_parameters_and_attributes() -> None:
    index = index_of(
        {
            "train.py": (
                "import os\nfrom model import Trainer, run, Other\n"
                "def main():\n    local = int(os.environ['LOCAL_RANK'])\n"
                "    Trainer(None, local)\n    run(1, index=local)\n    Other(0)\n"
                "def each(world_size):\n    for rank in range(world_size):\n"
                "        Other(rank)\n"
            ),
            "model.py": (
                "class Base:\n    def __init__(self, cfg, device_id):\n"
                "        self.device_id = device_id\n"
                "class Trainer(Base):\n    def fit(self):\n        return self.device_id\n"
                "class Other:\n    def __init__(self, gpu):\n        self.gpu = gpu\n"
                "def run(n, index=0):\n    return inner(index)\n"
                "def inner(which):\n    return which\n"
            ),
        }
    )
    assert index.rank_parameters[("model", "Base.__init__")] == {1}
    assert index.rank_parameters[("model", "run")] == {1}
    assert index.rank_parameters[("model", "inner")] == {0}  # passed on
    # `Other(0)`, and `Other(rank)` with a loop variable spelled like the rank: no rank.
    assert not index.rank_parameters.get(("model", "Other.__init__"))
    names = index.facts_for("model.py").names
    assert names["Trainer:self.device_id"].rank_test
    assert "Other:self.gpu" not in names or not names["Other:self.gpu"].rank_test
    functions = index.facts_for("model.py").functions
    assert functions["run"].rank_parameters == (1,) and functions["inner"].rank_parameters == (0,)


def test_rank_tests_follow_returns_and_attributes_across_modules() -> None:
    index = index_of(
        {
            "comm.py": (
                "import torch.distributed as dist\n"
                "def get_rank():\n    return dist.get_rank() if dist.is_initialized() else 0\n"
                "def is_main():\n    return get_rank() == 0\n"
                "def world():\n    return dist.get_world_size()\n"
            ),
            "base.py": (
                "import comm\nclass Base:\n    def __init__(self):\n"
                "        self.main = comm.is_main()\n        self.size = comm.world()\n"
            ),
            "train.py": (
                "import comm\nfrom base import Base\nclass T(Base):\n    def step(self):\n"
                "        return self.main, self.size, comm.is_main(), comm.world()\n"
            ),
        }
    )
    facts = index.facts_for("train.py").names
    assert facts["comm.is_main"] == NameFacts(rank_test=True)
    assert facts["T:self.main"] == NameFacts(rank_test=True, held=True)
    assert facts["comm.world"] == NameFacts(no_rank_test=True)  # known, and no rank test
    assert "T:self.size" not in facts


def test_object_kinds_follow_allocations_bases_and_fields_across_modules() -> None:
    index = index_of(
        {
            "factories.py": (
                "import torch\nimport deepspeed\nfrom accelerate import Accelerator\n"
                "def runtime(p):\n    acc = Accelerator(mixed_precision=p)\n    return acc\n"
                "def updater(ps):\n    return torch.optim.SGD(ps, lr=0.1)\n"
                "def engine(m):\n    eng, *_ = deepspeed.initialize(model=m)\n    return eng\n"
                "def either(ps, fast):\n"
                "    return updater(ps) if fast else torch.optim.Adam(ps)\n"
                "def mixed(ps, m):\n    if m:\n        return runtime(ps)\n    return updater(ps)\n"
            ),
            "models.py": (
                "from torch import nn\nimport abc\nclass Backbone(nn.Module):\n    pass\n"
                "class Record(abc.ABC):\n    pass\nclass DataModel(Record):\n    pass\n"
                "class Holder:\n    def __init__(self, ps):\n"
                "        self.opt = factories.updater(ps)\n"
                "import factories\nfrom somewhere import Unknown\n"
                "class Mystery(Unknown):\n    pass\n"
            ),
            "train.py": (
                "import factories\nfrom models import Backbone, DataModel, Holder, Mystery\n"
                "class Head(Backbone):\n    pass\nclass Run(Holder):\n"
                "    def go(self):\n        return self.opt\n"
                "a = factories.runtime(1)\nb = factories.updater(2)\nc = factories.engine(3)\n"
                "d = factories.either(4, 5)\ne = factories.mixed(6, 7)\n"
                "x = Backbone(), DataModel(), Mystery()\n"
            ),
        }
    )
    facts = index.facts_for("train.py").names
    assert facts["factories.runtime"].kind == "accelerator"
    assert facts["factories.updater"].kind == "optimizer"
    assert facts["factories.engine"].kind == "engine"
    assert facts["factories.either"].kind == "optimizer"  # both arms agree
    assert facts["factories.mixed"].kind is None  # they differ: unknown
    assert facts["Backbone"].kind == "module"
    assert facts["DataModel"].kind == "object"  # every base known, none catalogued
    assert "Mystery" not in facts or facts["Mystery"].kind is None
    assert facts["Run:self.opt"].kind == "optimizer"  # a field set in another module


def test_endless_iterables_by_their_own_iteration_across_modules() -> None:
    index = index_of(
        {
            "batches.py": (
                "class Forever:\n    def __iter__(self):\n        while True:\n"
                "            yield 1\n"
                "class Once(Forever):\n    def __iter__(self):\n        yield 1\n"
                "class Again(Once):\n    pass\n"
                "class Leaves:\n    def __iter__(self):\n        while True:\n"
                "            break\n            yield 1\n"
                "def cycle_of(xs):\n    while True:\n        for x in xs:\n"
                "            yield x\n"
                "def first_of(xs):\n    while True:\n        yield xs[0]\n        return\n"
                "class Wraps:\n    def __init__(self, xs):\n        self.xs = xs\n"
                "    def __iter__(self):\n        yield from self.xs\n"
                "class Counts(Wraps):\n    def __iter__(self):\n"
                "        for i, x in enumerate(self.xs):\n            if i > 3:\n"
                "                break\n            yield x\n"
                "def each_of(xs):\n    for x in xs:\n        yield x\n"
                "def each_twice(n, xs):\n    for x in xs:\n        yield x\n"
            ),
            "train.py": (
                "from batches import Forever, Once, Again, Leaves, cycle_of, first_of\n"
                "from batches import Wraps, Counts, each_of, each_twice\n"
                "class Local(Forever):\n    pass\n"
                "x = Forever(), Once(), Again(), Leaves(), cycle_of(1), first_of(2)\n"
                "y = Wraps(1), Counts(2), each_of(3), each_twice(4, 5)\n"
            ),
        }
    )
    facts = index.facts_for("train.py").names
    assert facts["Forever"].kind == "endless_iterable"
    assert facts["Once"].kind == "object"  # its own finite __iter__ ends the base's
    assert facts["Again"].kind == "object"
    assert facts["Leaves"].kind == "object"  # the loop breaks out
    assert facts["cycle_of"].kind == "endless_iterable"
    assert "first_of" not in facts or facts["first_of"].kind is None
    assert facts["Wraps"].kind == "first_argument_items"
    assert facts["Counts"].kind == "object"  # its own end: a count
    assert facts["each_of"].kind == "first_argument_items"
    assert "each_twice" not in facts or facts["each_twice"].kind is None  # a later argument


def test_an_engine_field_from_the_first_item_of_deepspeed_initialize_in_a_base_class() -> None:
    index = index_of(
        {
            "base.py": (
                "import deepspeed\nclass Base:\n"
                "    def init_models(self):\n        self.model, self.tok = load(1)\n"
                "    def init_engines(self, cfg):\n"
                "        self.model, *_ = deepspeed.initialize(model=self.model, config=cfg)\n"
                "        self.opt, self.engine = make(2)\n"
            ),
            "train.py": (
                "from base import Base\nclass Sft(Base):\n"
                "    def init_models(self):\n        self.model, self.tok = load(3)\n"
                "    def step(self):\n        self.model.step()\n        self.opt.step()\n"
            ),
        }
    )
    facts = index.facts_for("train.py").names
    # the subclass's own assignment is of unknown kind; the base class's is the engine
    assert facts["Sft:self.model"].kind == "engine"
    assert "Sft:self.opt" not in facts or facts["Sft:self.opt"].kind is None


def test_loader_parameters_from_callers_that_build_on_a_distributed_sampler() -> None:
    index = index_of(
        {
            "loops.py": (
                "def train(model, loader, epochs):\n    return run(loader)\n"
                "def run(batches):\n    return batches\n"
                "def ordered(model, loader):\n    return loader\n"
                "def plain(model, loader):\n    return loader\n"
                "from torch.utils.data import DataLoader, DistributedSampler\n"
                "def build(ds):\n    mine = DataLoader(ds, sampler=DistributedSampler(ds))\n"
                "    own(mine)\n"
                "def own(loader):\n    return loader\n"
            ),
            "main.py": (
                "import torch\nfrom torch.utils.data import DataLoader, DistributedSampler\n"
                "from loops import ordered, plain, train\n"
                "def main(m, ds):\n"
                "    s = DistributedSampler(ds)\n"
                "    loader = torch.utils.data.DataLoader(ds, sampler=s)\n"
                "    train(m, loader=loader, epochs=2)\n"
                "    fixed = DataLoader(ds, None, None, DistributedSampler(ds, shuffle=False))\n"
                "    ordered(m, fixed)\n"
                "    plain(m, DataLoader(ds, shuffle=True))\n"
            ),
        }
    )
    functions = index.facts_for("loops.py").functions
    # by keyword to `train`, then passed on as it is to `run`
    assert functions["train"].loader_parameters == (1,)
    assert functions["run"].loader_parameters == (0,)
    # a sampler that never shuffles; a loader on no distributed sampler
    assert "ordered" not in functions or not functions["ordered"].loader_parameters
    assert "plain" not in functions or not functions["plain"].loader_parameters
    # a loader the module builds and hands to its own function: its own analysis's
    assert "own" not in functions or not functions["own"].loader_parameters
    assert index.facts_for("loops.py").informs_rules()


def test_parameter_kinds_from_every_caller() -> None:
    index = index_of(
        {
            "loops.py": (
                "def fit(model, booster, steps):\n    return booster\n"
                "def other(model, booster):\n    return booster\n"
            ),
            "main.py": (
                "from accelerate import Accelerator\nfrom loops import fit, other\n"
                "def main(m):\n    acc = Accelerator()\n    fit(m, acc, 3)\n"
                "    other(m, acc)\n"
                "def again(m, given):\n    fit(m, booster=Accelerator(), steps=1)\n"
                "    other(m, given)\n"  # an argument of unknown kind: no kind for `other`
            ),
        }
    )
    functions = index.facts_for("loops.py").functions
    assert functions["fit"].parameter_kinds == ((1, "accelerator"),)
    assert "other" not in functions or not functions["other"].parameter_kinds


def test_a_rank_test_in_either_branch_and_a_dotted_import_beside_a_script() -> None:
    """``return is_local(a) if local else is_global(a)`` returns a rank test; a script
    imports ``pyg.dist_utils`` from the folder beside it (that folder is on sys.path)."""
    index = index_of(
        {
            "mlpf/pyg/dist_utils.py": (
                "def is_local(args):\n    return args.local_rank == 0\n"
                "def is_global(args):\n    return args.rank == 0\n"
                "def is_master(args, local=False):\n"
                "    return is_local(args) if local else is_global(args)\n"
            ),
            "mlpf/pipeline.py": (
                "from pyg.dist_utils import is_master\ndef run(args):\n    return is_master(args)\n"
            ),
        }
    )
    utils = index.module_of_path["mlpf/pyg/dist_utils.py"]
    script = index.module_of_path["mlpf/pipeline.py"]
    assert index.resolve_module("pyg.dist_utils", script) == utils
    assert (utils, "is_master") in index.rank_tests
    assert index.facts_for("mlpf/pipeline.py").names["is_master"].rank_test


def test_a_ddp_model_handed_down_marks_the_parameters_that_receive_it() -> None:
    index = index_of(
        {
            "evaluation.py": (
                "def evaluate(model, loader):\n    return [model(b) for b in loader]\n"
                "def run(loader, model):\n    return evaluate(model, loader)\n"
                "def probe(model):\n    return model\n"
                "def tune(model):\n    return model\n"
            ),
            "train.py": (
                "from torch.nn.parallel import DistributedDataParallel as DDP\n"
                "import evaluation\n"
                "def main(net, loader):\n"
                "    evaluation.probe(net)\n"
                "    net = DDP(net)\n"
                "    evaluation.run(loader, net)\n"
                "    quiet = DDP(net, broadcast_buffers=False)\n"
                "    evaluation.tune(quiet)\n"
            ),
        }
    )
    assert index.wrapped_parameters[("evaluation", "run")] == {1}
    assert index.wrapped_parameters[("evaluation", "evaluate")] == {0}  # through run()
    assert not index.wrapped_parameters.get(("evaluation", "probe"))  # before wrapping
    assert not index.wrapped_parameters.get(("evaluation", "tune"))  # buffers kept local
    facts = index.facts_for("evaluation.py").functions
    assert facts["evaluate"] == OwnFunctionFacts(ddp_parameters=(0,))
    # Its one caller hands it a `DistributedDataParallel`: a module.
    assert facts["run"] == OwnFunctionFacts(ddp_parameters=(1,), parameter_kinds=((1, "module"),))


def _facts_by_scanning(index: ProjectIndex, path: str) -> FileFacts:
    """``facts_for`` as it was before the per-module grouping: every file scanned the
    project-wide sets. The reference the grouped answer must equal."""
    module = index.module_of_path.get(path)
    if module is None:
        return FileFacts()
    functions: dict[str, OwnFunctionFacts] = {}
    for owner, name in sorted(index.device_chosen_by_callers):
        if owner == module:
            functions[name] = OwnFunctionFacts(callers_choose_device=True)
    for (owner, name), positions in sorted(index.wrapped_parameters.items()):
        if owner == module and positions:
            chosen = functions.get(name, OwnFunctionFacts())
            functions[name] = replace(chosen, ddp_parameters=tuple(sorted(positions)))
    for (owner, name), by_position in sorted(index.parameter_kinds.items()):
        if owner == module and by_position:
            chosen = functions.get(name, OwnFunctionFacts())
            kinds = tuple(sorted(by_position.items()))
            functions[name] = replace(chosen, parameter_kinds=kinds)
    return FileFacts(index.facts_for(path).names, functions)


def generated_project(modules: int) -> dict[str, str]:
    """A project of ``modules`` files that call, wrap and set devices across modules."""
    files = {"pkg/__init__.py": ""}
    for number in range(modules):
        previous = f"m{number - 1}" if number else "m0"
        files[f"pkg/m{number}.py"] = (
            "import torch\nimport torch.distributed as dist\n"
            "from torch.nn.parallel import DistributedDataParallel as DDP\n"
            f"from pkg import {previous}\n"
            "def setup():\n    dist.init_process_group('nccl')\n"
            "def evaluate(model, loader):\n    return [model(b) for b in loader]\n"
            "def is_main():\n    return dist.get_rank() == 0\n"
            "def prepare(net):\n    return net\n"
            "def main(net, loader, rank):\n"
            f"    {previous}.setup()\n    torch.cuda.set_device(rank)\n"
            f"    {previous}.prepare(net)\n"
            f"    net = DDP(net)\n    {previous}.evaluate(net, loader)\n"
            f"    if {previous}.is_main():\n        dist.barrier()\n"
        )
    return files


def test_facts_grouped_by_module_equal_the_project_wide_scan() -> None:
    index = index_of(generated_project(40))
    for path in index.module_of_path:
        assert index.facts_for(path) == _facts_by_scanning(index, path), path
    own = index.facts_for("pkg/m3.py").functions
    # Its one caller passes `net` after binding it to `DDP(net)`: a module; `prepare`
    # gets `net` before that binding, of unknown kind.
    assert own["evaluate"] == OwnFunctionFacts(
        callers_choose_device=True, ddp_parameters=(0,), parameter_kinds=((0, "module"),)
    )
    assert own["prepare"] == OwnFunctionFacts(callers_choose_device=True)


def test_a_plain_function_whose_first_parameter_is_cls_with_a_default_is_summarised() -> None:
    """score_sde_pytorch's registry decorator (``def register(cls=None, *, name=None)``)
    stopped the whole run with an IndexError: its ``cls`` is no class's."""
    from ddplint.code.project.module_summary import summarize

    text = "def register(cls=None, *, name=None):\n    if cls:\n        return cls\n"
    summary = summarize(text)
    assert summary is not None


def test_a_module_top_level_hands_the_rank_it_reads_in_place() -> None:
    """``main(int(os.environ["LOCAL_RANK"]))`` under the ``__main__`` test hands ``main``
    the rank (a name bound there first counts too); the number of processes does not."""
    index = index_of(
        {
            "train.py": (
                "import os\nimport torch.distributed as dist\n"
                "from loops import fit, sync\n\n"
                "if __name__ == '__main__':\n"
                "    fit(0, int(os.environ['LOCAL_RANK']))\n"
                "    rank = dist.get_rank()\n"
                "    sync(int(os.environ['WORLD_SIZE']), rank)\n"
            ),
            "loops.py": "def fit(epochs, rank):\n    pass\n\n\ndef sync(size, rank):\n    pass\n",
        }
    )
    assert index.rank_parameters[("loops", "fit")] == {1}
    assert index.rank_parameters[("loops", "sync")] == {1}


def test_a_top_level_name_bound_to_the_rank_is_handed_by_later_statements() -> None:
    """``local_rank = ...`` and ``main(local_rank)`` as two top-level statements hand the
    rank; bound again to something else in between, they do not."""
    loops = "def fit(rank):\n    pass\n\n\ndef check(rank):\n    pass\n"
    script = (
        "import os\nfrom loops import fit, check\n\n"
        "local_rank = int(os.environ['LOCAL_RANK'])\n"
        "fit(local_rank)\n"
        "local_rank = 0\n"
        "check(local_rank)\n"
    )
    index = index_of({"train.py": script, "loops.py": loops})
    assert index.rank_parameters[("loops", "fit")] == {0}
    assert not index.rank_parameters.get(("loops", "check"))


def test_file_facts_survive_their_encoding_and_other_encodings_are_refused() -> None:
    reach = ReachedCollective(
        "torch.distributed.barrier",
        "barrier",
        "barrier",
        False,
        False,
        ("utils.save", "utils._wait"),
        "utils.py:11",
        Switch("barrier_after", 2),
    )
    facts = FileFacts(
        {
            "utils.save": NameFacts(reach, no_rank_test=True, sharded_arguments=(0, 2)),
            "T:self.main": NameFacts(rank_test=True, held=True),
            "helper": NameFacts(no_rank_test=True, rank_zero_only=True, not_a_collective=True),
            "comm.reduce": NameFacts(agreement=Agreement(("t", "n"), ("n",), ("t",))),
            "comm.sync": NameFacts(agreement=Agreement(("t",), None, ("t",))),
            "dist_tools.init": NameFacts(no_rank_test=True, rank_items=(0, 1)),
            "runtime.build": NameFacts(no_rank_test=True, kind="accelerator"),
            "datasets.load": NameFacts(
                replace(reach, switch=Switch("rank", 1, values=(-1, "main"), default=(-1,)))
            ),
        },
        {
            "evaluate": OwnFunctionFacts(True, (1,)),
            "prepare": OwnFunctionFacts(True),
            "fit": OwnFunctionFacts(parameter_kinds=((1, "accelerator"),)),
        },
    )
    assert decode_facts(encode_facts(facts)) == facts
    for alone, untrained, main in ((True, False, False), (False, True, False), (0, 0, 1)):
        roles = FileFacts(runs_alone=alone, off_training=untrained, main_alone=bool(main))
        assert roles and decode_facts(encode_facts(roles)) == roles
    assert encode_facts(FileFacts()) == ""
    # The one-letter dictionaries of facts version 1 (and anything else) read as none.
    for other in ('{"utils.save":{"k":1}}', '{"a":{"k":1},"def:f":{"c":1}}', "[1, 2]", "{"):
        assert decode_facts(other) is NO_FACTS


ZERO_FIRST = (
    "from contextlib import contextmanager\nimport torch\n\n@contextmanager\n"
    "def zero_first(local_rank):\n"
    "    if local_rank not in [-1, 0]:\n        torch.distributed.barrier()\n"
    "    yield\n"
    "    if local_rank == 0:\n        torch.distributed.barrier()\n"
)
LOADERS = (
    "from zero import zero_first\n\n"
    "def create_dataloader(path, batch_size, rank=-1):\n"
    "    with zero_first(rank):\n        return list(range(batch_size))\n"
)


@pytest.mark.parametrize(
    ("call", "reaches"),
    [
        ("create_dataloader(p, 8, rank=rank)", True),
        ("create_dataloader(p, 8, rank)", True),
        ("create_dataloader(p, 8, rank=0)", True),
        ("create_dataloader(p, 8, rank=3)", True),
        ("create_dataloader(p, 8, **kw)", True),
        ("create_dataloader(p, 8, rank=-1)", False),
        ("create_dataloader(p, 8, -1)", False),
        ("create_dataloader(p, 8)", False),
    ],
)
def test_a_barrier_switched_by_a_parameter_compared_with_literals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, call: str, reaches: bool
) -> None:
    # yolov5's `torch_distributed_zero_first(rank)`: a barrier for any rank but -1 and
    # 0, another for 0; a loader helper hands its own `rank=-1` on. The rank-0 branch
    # that builds the test loader with rank -1 issues no barrier.
    monkeypatch.setenv("DDPLINT_CACHE_DIR", str(tmp_path / ".cache"))
    root = tmp_path / "p"
    root.mkdir()
    (root / "zero.py").write_text(ZERO_FIRST)
    (root / "datasets.py").write_text(LOADERS)
    (root / "train.py").write_text(
        "import torch.distributed as dist\nfrom datasets import create_dataloader\n\n"
        f"def train(p, kw):\n    rank = dist.get_rank()\n    if rank == 0:\n        {call}\n\n"
        "if __name__ == '__main__':\n    dist.init_process_group('gloo')\n    train('d', {})\n"
    )
    found_rules = {rule for _, _, rule in found(run(root, [root]), root)}
    assert ("DDP201" in found_rules) is reaches


def test_a_helper_that_agrees_its_argument_says_so_to_other_modules() -> None:
    index = index_of(
        {
            "comm.py": (FIXTURES / "agreed_elsewhere" / "comm.py").read_text(),
            "train.py": "import comm\nfrom comm import sync_flag\n"
            "def f(x):\n    sync_flag(x)\n    comm.reduce_losses(x)\n    comm.mean_here(x)\n",
        }
    )
    names = index.facts_for("train.py").names
    assert names["sync_flag"].agreement == Agreement(("flag",), (), ("flag",))
    assert names["comm.reduce_losses"].agreement == Agreement(("losses",), (), ())
    # it waits at a barrier and returns what it computed from its argument on this rank
    assert names["comm.mean_here"].agreement == Agreement(("values",), ("values",), ())


def test_only_facts_that_can_make_a_rule_fire_lift_the_pre_filters() -> None:
    clearing = FileFacts(
        {"f": NameFacts(no_rank_test=True, sharded_arguments=(0,))},
        {"g": OwnFunctionFacts(callers_choose_device=True)},
    )
    assert not informs_rules(encode_facts(clearing))
    assert informs_rules(encode_facts(FileFacts({"f": NameFacts(chooses_device=True)})))
    assert informs_rules(encode_facts(FileFacts({}, {"g": OwnFunctionFacts(ddp_parameters=(0,))})))


def roles_of(files: dict[str, str]) -> tuple[set[str], set[str]]:
    roles = index_of(files).program_roles
    return set(roles.alone), set(roles.untrained)


DISTRIBUTED = (
    "import torch.distributed as dist\nif __name__ == '__main__':\n"
    "    dist.init_process_group('nccl')\n    loss.backward()\n"
)
SINGLE = "import helpers\nfor batch in loader:\n    loss.backward()\n"


def test_a_script_that_runs_the_projects_code_at_its_top_level_is_a_program() -> None:
    # No `__main__` test, no loop, no function of its own: a top-level call of the
    # project's function, or of a method of an object a project class made.
    trainer = "import torch\nclass Trainer:\n    def train(self):\n        loss.backward()\n"
    for script in (
        "from trainer import Trainer\nt = Trainer()\nt.train()\n",
        "import trainer\ntrainer.Trainer().train()\n",
        "from trainer import Trainer\nimport torch\ntorch.manual_seed(0)\n"
        "t = Trainer()\nt.train()\n",
    ):
        alone, _ = roles_of({"run.py": script, "trainer.py": trainer})
        assert alone == {"run", "trainer"}, script
    # A library's call at the top level (a seed, a logger) runs no project code: the
    # module is no program, and what it imports stays unknown.
    for script in (
        "import torch\nimport trainer\ntorch.manual_seed(0)\n",
        "import logging\nimport trainer\nlog = logging.getLogger()\nlog.setLevel(10)\n",
        "from trainer import Trainer\nt = Trainer()\n",
    ):
        alone, _ = roles_of({"run.py": script, "trainer.py": trainer})
        assert not alone, script


def test_programs_that_start_no_group_run_their_modules_alone() -> None:
    # A script at the top level (a loop), a helper only it imports: one process.
    alone, untrained = roles_of(
        {"train_ddp.py": DISTRIBUTED, "train_one.py": SINGLE, "helpers.py": "def f(): pass\n"}
    )
    assert alone == {"train_one", "helpers"} and not untrained
    # The same helper imported by the distributed script too: reported there.
    alone, _ = roles_of(
        {
            "train_ddp.py": "import helpers\n" + DISTRIBUTED,
            "train_one.py": SINGLE,
            "helpers.py": "def f(): pass\n",
        }
    )
    assert alone == {"train_one"}
    # A group started in an imported helper of a package makes the script distributed.
    alone, _ = roles_of(
        {
            "pkg/__init__.py": "",
            "pkg/setup.py": "import torch.distributed as dist\n"
            "def go():\n    dist.init_process_group()\n",
            "train.py": "from pkg.setup import go\ndef main():\n    go()\nmain()\n",
            "train_one.py": SINGLE,
            "helpers.py": "",
        }
    )
    assert "train" not in alone and "train_one" in alone


GATHERS_WHEN_INITIALIZED = (
    "import torch.distributed as dist\ndef gather(x):\n    if dist.is_initialized():\n"
    "        dist.all_gather([x], x)\n    return dist.get_rank()\n"
)


def test_a_query_or_a_collective_starts_no_group() -> None:
    # `model.py` gathers only once a group is up and reads the rank: a script that
    # imports it starts none, and runs alone. `model.py` itself, written for a group,
    # may run in a program its importers do not show: not alone.
    files = {
        "train_ddp.py": DISTRIBUTED,
        "train_one.py": "import model\n" + SINGLE,
        "model.py": GATHERS_WHEN_INITIALIZED,
        "helpers.py": "",
    }
    alone, _ = roles_of(files)
    assert alone == {"train_one", "helpers"}
    # A module the script that starts the group imports too: not alone.
    files["train_ddp.py"] = "import model\n" + DISTRIBUTED
    files["model.py"] = ""
    alone, _ = roles_of(files)
    assert alone == {"train_one", "helpers"}
    # A script that itself asks for the rank is written for a launcher (its group may
    # start in a helper an import does not resolve to): distributed.
    files["train_ddp.py"] = DISTRIBUTED
    files["train_one.py"] = "import torch.distributed as dist\nimport model\n" + SINGLE
    files["train_one.py"] += "print(dist.get_rank())\n"
    alone, _ = roles_of(files)
    assert not alone
    # Wrapping in DDP is evidence of intent: distributed.
    files["train_ddp.py"] = DISTRIBUTED
    wraps = "from torch.nn.parallel import DistributedDataParallel\n"
    files["train_one.py"] = wraps + "model = DistributedDataParallel(model)\n" + SINGLE
    alone, _ = roles_of(files)
    assert not alone
    # The class imported and never used is none: one process.
    files["train_one.py"] = wraps + SINGLE
    alone, _ = roles_of(files)
    assert alone == {"train_one", "helpers"}
    # So is a Lightning strategy handed to `LightningLite` (Fabric's predecessor), a
    # class the script derives from; imported alone, it says nothing.
    lite = "from pytorch_lightning.lite import LightningLite\n"
    files["train_one.py"] = lite + "class Lite(LightningLite): pass\n" + SINGLE
    alone, _ = roles_of(files)
    assert not alone
    files["train_one.py"] = lite + SINGLE
    alone, _ = roles_of(files)
    assert alone == {"train_one", "helpers"}


ONE_PROCESS_LOOP = (
    "import torch\n"
    "{group}"
    "model = torch.nn.Linear(2, 2).cuda()\n"
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "for i, batch in enumerate(loader):\n"
    "    loss = model(batch.cuda()).sum()\n"
    "    loss.backward()\n"
    "    if not torch.isnan(loss):\n"
    "        opt.step()\n"
    "    if not (i % 4):\n"
    "        opt.step()\n"
)


def test_a_hazard_that_needs_peers_is_not_reported_where_one_process_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The script starts no process group: a step some ranks skip (DDP208) has no peer
    # to part from; the off-by-one stepping test (DDP401) is wrong in any run.
    monkeypatch.setenv("DDPLINT_CACHE_DIR", str(tmp_path / ".cache"))
    root = tmp_path / "one"
    root.mkdir()
    (root / "train.py").write_text(ONE_PROCESS_LOOP.format(group=""))
    assert {rule for _, _, rule in found(run(root, [root]), root)} == {"DDP401"}
    # The same loop in a program that starts one: both.
    start = "import torch.distributed as dist\ndist.init_process_group('nccl')\n"
    (root / "train.py").write_text(ONE_PROCESS_LOOP.format(group=start))
    assert {rule for _, _, rule in found(run(root, [root]), root)} == {"DDP208", "DDP401"}
    # The loop in a function of a module a script runs (a top-level call of the
    # project's function makes the script a program) that starts no group: alone;
    # once a distributed script runs it too, it may run with peers.
    body = ONE_PROCESS_LOOP.format(group="").split("\n", 1)[1]
    (root / "loop.py").write_text(
        "import torch\n\n\ndef f(loader):\n" + textwrap.indent(body, "    ")
    )
    (root / "train.py").write_text("import loop\nloop.f([])\n")
    assert {rule for _, _, rule in found(run(root, [root]), root)} == {"DDP401"}
    (root / "train_ddp.py").write_text("import loop\n" + start + "loop.f([])\n")
    assert {rule for _, _, rule in found(run(root, [root]), root)} == {"DDP208", "DDP401"}
    # A sampler that repeats its order without `set_epoch` does so in one process too
    # (DDP402), though the helper that would start the group is not in what is linted.
    for name in ("loop.py", "train.py", "train_ddp.py"):
        (root / name).unlink()
    (root / "train.py").write_text(
        "from torch.utils.data import DataLoader\n"
        "from torch.utils.data.distributed import DistributedSampler\n"
        "from helpers.dist import init_dist\n"
        "init_dist()\n"
        "loader = DataLoader(data, sampler=DistributedSampler(data, shuffle=True))\n"
        "for epoch in range(10):\n"
        "    for batch in loader:\n"
        "        step(batch)\n"
    )
    assert {rule for _, _, rule in found(run(root, [root]), root)} == {"DDP402"}


UNWRAPS = (
    "from torch.nn.parallel import DistributedDataParallel as DDP\n"
    "from torch.nn import DataParallel as DP\nimport torch\n"
    "def unwrap(m):\n    return m.module if isinstance(m, DDP) else m\n"
    "def bare(m):\n    return m.module if isinstance(m, (DDP, DP)) else m\n"
    "def exact(m):\n    return m.module if type(m) is DDP else m\n"
    "def sub(m):\n"
    "    return issubclass(type(m), torch.nn.parallel.DistributedDataParallel)\n"
)


def test_a_type_test_of_a_wrapper_starts_no_group() -> None:
    # `unwrap.py` tests a model's type against DDP (isinstance, a tuple of classes,
    # `type(m) is`, issubclass of a dotted name): it unwraps what another program
    # wrapped, and wraps nothing. The script that imports it is one process (the module
    # itself, written for DDP, may run in a program its importers do not show).
    files = {
        "train_ddp.py": DISTRIBUTED,
        "train_one.py": "import unwrap\n" + SINGLE,
        "unwrap.py": UNWRAPS,
        "helpers.py": "",
    }
    alone, _ = roles_of(files)
    assert alone == {"train_one", "helpers"}
    # The same module wrapping a model too (a call of the class) after starting the
    # group, the script calling it: distributed. The wrap alone needs a group nothing
    # starts (it would raise): one process.
    start = "import torch.distributed as dist\n"
    files["unwrap.py"] = (
        UNWRAPS + start + "def wrap(m):\n    dist.init_process_group('nccl')\n    return DDP(m)\n"
    )
    files["train_one.py"] = "import unwrap\n" + SINGLE + "model = unwrap.wrap(model)\n"
    alone, _ = roles_of(files)
    assert "train_one" not in alone
    files["unwrap.py"] = UNWRAPS + "def wrap(m):\n    return DDP(m)\n"
    alone, _ = roles_of(files)
    assert "train_one" in alone
    # A dotted class read outside a type test (`SyncBatchNorm.convert_sync_batchnorm`),
    # at the module's top level (run on import), beside a group started there.
    files["train_one.py"] = "import unwrap\n" + SINGLE
    files["unwrap.py"] = (
        UNWRAPS
        + start
        + "conv = torch.nn.SyncBatchNorm.convert_sync_batchnorm\ndist.init_process_group('gloo')\n"
    )
    alone, _ = roles_of(files)
    assert "train_one" not in alone


def test_a_main_block_is_one_process_where_its_own_program_is() -> None:
    # `selftest.py` is imported by the distributed script (not alone), yet run as its
    # own program it starts no group: its `__main__` block is one process.
    files = {
        "train_ddp.py": "import selftest\n" + DISTRIBUTED,
        "selftest.py": "def f():\n    pass\nif __name__ == '__main__':\n    f()\n",
    }
    roles = index_of(files).program_roles
    assert "selftest" not in roles.alone and "selftest" in roles.alone_programs
    assert "train_ddp" not in roles.alone_programs
    assert index_of(files).facts_for("selftest.py").main_alone
    # A self-test that imports a module starting a group: not one process.
    files["setup_group.py"] = "import torch.distributed as dist\ndist.init_process_group()\n"
    files["selftest.py"] = "import setup_group\n" + files["selftest.py"]
    roles = index_of(files).program_roles
    assert "selftest" not in roles.alone_programs
    assert not index_of(files).facts_for("selftest.py").main_alone


SETUP_HELPERS = (
    "import torch.distributed as dist\n"
    "from torch.nn.parallel import DistributedDataParallel as DDP\n"
    "def setup_ddp():\n    dist.init_process_group('nccl')\n"
    "class Wrapper:\n    def wrap(self, m):\n        setup_ddp()\n        return DDP(m)\n"
    "class AverageMeter:\n    def update(self, v):\n        self.v = v\n"
)


def train_using(*lines: str) -> str:
    """A single-process training script that imports `utils` and runs ``lines``."""
    return "import utils\n" + SINGLE + "".join(f"{line}\n" for line in lines)


@pytest.mark.parametrize(
    "script",
    [
        train_using("meter = utils.AverageMeter()"),
        "from utils import AverageMeter, setup_ddp\n" + SINGLE + "meter = AverageMeter()\n",
        # what a function of the script never run by its entry calls is never run
        train_using("meter = utils.AverageMeter()").replace("import utils\n", "")
        + "import utils\ndef unused():\n    utils.setup_ddp()\n",
    ],
)
def test_a_group_starter_imported_but_never_run_starts_no_group(script: str) -> None:
    # `utils.py` holds a helper that starts the group and one that wraps in DDP, beside
    # a meter: a script that imports it and runs only the meter is one process.
    files = {"train.py": script, "utils.py": SETUP_HELPERS, "helpers.py": ""}
    alone, _ = roles_of(files)
    assert "train" in alone and "helpers" in alone


@pytest.mark.parametrize(
    "script",
    [
        train_using("utils.setup_ddp()"),
        "from utils import setup_ddp\n" + SINGLE + "setup_ddp()\n",
        # a callback: named, not called here (`mp.spawn(fn)`, a hook list)
        train_using("hooks = [utils.setup_ddp]"),
        # a method of a class the script makes
        train_using("model = utils.Wrapper().wrap(model)"),
        # through a function of the script its entry calls, with an import inside it
        "def main():\n    from utils import setup_ddp\n    setup_ddp()\n" + SINGLE + "main()\n",
        # everything `*` brings in may run
        "from utils import *\n" + SINGLE,
        # a name looked up on the module by a computed name
        train_using("getattr(utils, name)()"),
        # a module loaded by a computed name, every name of it may run
        "import importlib\nimport utils\n" + SINGLE + "importlib.import_module(f'ut{x}')\n",
    ],
)
def test_a_group_starter_the_entry_reaches_starts_a_group(script: str) -> None:
    files = {"train.py": script, "utils.py": SETUP_HELPERS, "helpers.py": ""}
    alone, _ = roles_of(files)
    assert "train" not in alone and "utils" not in alone


@pytest.mark.parametrize(
    "wrapper",
    [
        "def wrap(m, world_size=1):\n    if world_size > 1:\n        m = DDP(m)\n    return m\n",
        "def wrap(m):\n    return torch.nn.SyncBatchNorm.convert_sync_batchnorm(m)\n",
        "def wrap(m):\n    return FSDP(m)\n",
    ],
)
def test_a_wrap_for_a_group_nothing_starts_runs_in_one_process(wrapper: str) -> None:
    # stable-dreamfusion's trainer wraps in DDP when `world_size > 1`, and nothing in
    # the project starts a group (no `init_process_group`, launcher or framework): the
    # wrap would raise, the program runs one process. With the group started in the
    # script's own helper module: distributed.
    header = (
        "import torch\nimport torch.distributed as dist\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
    )
    files = {
        "train.py": train_using("model = utils.wrap(model)"),
        "utils.py": header + wrapper,
        "helpers.py": "",
    }
    alone, _ = roles_of(files)
    assert {"train", "helpers"} <= alone
    files["train.py"] = train_using("utils.setup()", "model = utils.wrap(model)")
    files["utils.py"] += "def setup():\n    dist.init_process_group('nccl')\n"
    alone, _ = roles_of(files)
    assert "train" not in alone and "helpers" not in alone


def test_a_group_started_at_a_modules_top_level_or_through_its_own_lookup() -> None:
    # Importing runs the top level: a helper it calls there starts the group.
    files = {
        "train.py": train_using("meter = utils.AverageMeter()"),
        "utils.py": SETUP_HELPERS + "setup_ddp()\n",
    }
    alone, _ = roles_of(files)
    assert "train" not in alone
    # The meter looks a name of its own module up by a computed name.
    files["utils.py"] = SETUP_HELPERS.replace("self.v = v", "self.v = globals()[v]()")
    alone, _ = roles_of(files)
    assert "train" not in alone
    # A helper of a second module the group starter reaches.
    files["utils.py"] = SETUP_HELPERS.replace("self.v = v", "self.v = dist_utils.start()")
    files["utils.py"] = "import dist_utils\n" + files["utils.py"]
    files["dist_utils.py"] = (
        "import torch.distributed as dist\ndef start():\n    dist.init_process_group()\n"
    )
    alone, _ = roles_of(files)
    assert "train" not in alone


#: Two programs share `loader`, whose top level loads a module by a computed name
#: (`ut...`): among `a_train`'s imports that is `utils`, whose every unit may run (its
#: group starter too); `b_train` imports no `ut...` module, and `other`'s starter it never
#: runs. `c_train` calls `other.setup_ddp` through `caller`.
LOADED_BY_NAME = {
    "a_train.py": "import loader\nimport utils\n" + SINGLE,
    "b_train.py": "import loader\nimport other\n" + SINGLE,
    "c_train.py": "import loader\nimport caller\n" + SINGLE,
    "loader.py": "import importlib\ndef load(x):\n    importlib.import_module(f'ut{x}')\nload(1)\n",
    "caller.py": "import other\nother.setup_ddp()\n",
    "utils.py": SETUP_HELPERS,
    "other.py": SETUP_HELPERS,
    "helpers.py": "",
}


def test_a_group_reached_through_a_load_in_one_program_is_not_reached_in_another() -> None:
    # What one program's search learns holds in the next only where reads led to the
    # starter: `loader` starts a group in `a_train` through its load alone.
    roles = index_of(LOADED_BY_NAME).program_roles
    assert "a_train" not in roles.alone_programs and "c_train" not in roles.alone_programs
    assert "b_train" in roles.alone_programs
    links = index_of(LOADED_BY_NAME).links
    programs = {
        "a_train": {"a_train", "loader", "utils", "helpers"},
        "b_train": {"b_train", "loader", "other", "helpers"},
        "c_train": {"c_train", "loader", "caller", "other", "helpers"},
    }
    for order in (("a_train", "b_train", "c_train"), ("c_train", "b_train", "a_train")):
        groups = GroupReach(
            {module: part.get("group", {}) for module, part in links.items()},
            unseen_reach({module: part.get("reach", {}) for module, part in links.items()}),
        )
        found = {program: groups.starts_group(programs[program]) for program in order}
        assert found == {"a_train": True, "b_train": False, "c_train": True}


def test_torch_multiprocessing_setup_starts_no_group() -> None:
    # The start method and a queue are Python's multiprocessing: one process trains.
    setup = "import torch.multiprocessing as mp\nmp.set_start_method('spawn', force=True)\n"
    alone, _ = roles_of({"train.py": setup + SINGLE + "q = mp.Queue()\n"})
    assert "train" in alone
    # `spawn` starts the workers of a group.
    alone, _ = roles_of({"train.py": setup + SINGLE + "mp.spawn(worker, nprocs=2)\n"})
    assert "train" not in alone


def test_a_loop_in_a_top_level_block_makes_a_program() -> None:
    # The training loop under `if args.train:` (not `__main__`) runs the script.
    loop = "for batch in loader:\n        loss.backward()\n"
    for head in ("if args.train:\n    ", "with ctx:\n    ", "try:\n    "):
        tail = "except Exception:\n    pass\n" if head.startswith("try") else ""
        script = "import helpers\n" + head + loop + tail
        alone, _ = roles_of({"train.py": script, "helpers.py": ""})
        assert alone == {"train", "helpers"}
    # A block with no loop at the top level is no program: `helpers` is run by none.
    script = "import helpers\nif args.train:\n    loss.backward()\n"
    alone, _ = roles_of({"train.py": script, "helpers.py": ""})
    assert not alone


def test_what_a_program_imports_resolves_from_its_folder_too() -> None:
    # `python codec/train.py` puts `codec/` on `sys.path`: `models/net.py`'s
    # `from quantization import vq` is `codec/quantization/vq.py` in that program, which
    # starts a group: `vq` is not alone, though the single-process `infer.py` runs it too.
    files = {
        "codec/train.py": "from models.net import Net\n" + DISTRIBUTED,
        "codec/models/net.py": "from quantization import vq\n",
        "codec/quantization/vq.py": "",
        "codec/infer.py": "from quantization import vq\n" + SINGLE,
        "codec/helpers.py": "",
    }
    alone, _ = roles_of(files)
    assert "codec.quantization.vq" not in alone and "codec.infer" in alone
    # Run only by the single-process script: alone.
    files["codec/train.py"] = DISTRIBUTED
    alone, _ = roles_of(files)
    assert "codec.quantization.vq" in alone


def test_a_program_runs_what_it_imports_with_a_star_or_in_a_function() -> None:
    # `from trainers import *` and an import inside `main()`: the closure holds them, so
    # the distributed script's trainer is not alone and the one-process script's is.
    files = {
        "train_ddp.py": "from trainers import *\n" + DISTRIBUTED,
        "train_one.py": "def main():\n    import solo\n    solo.run()\n" + SINGLE,
        "trainers.py": "def fit(): pass\n",
        "solo.py": "def run(): pass\n",
    }
    alone, _ = roles_of(files)
    assert "trainers" not in alone and "solo" in alone
    files["train_ddp.py"] = "from solo import *\n" + DISTRIBUTED
    alone, _ = roles_of(files)
    assert "solo" not in alone


FITTER = (
    "class Fitter:\n    def fit(self):\n        loss.backward()\n"
    "fitter = Fitter(opt).cuda()\nfitter.fit()\n"
)


def test_a_script_that_calls_a_method_of_its_own_object_is_a_program() -> None:
    # `fitter.fit()` at the top level of the module that made `fitter` from its own
    # class: a script, run alone beside the distributed one.
    alone, _ = roles_of({"train_ddp.py": DISTRIBUTED, "fit_one.py": FITTER})
    assert alone == {"fit_one"}
    # A method of an object made elsewhere (`logging.getLogger`), or a module with no
    # top-level call of its own: no program, unknown.
    library = "import logging\nlog = logging.getLogger(__name__)\nlog.setLevel(10)\n"
    made_elsewhere = FITTER.replace("fitter = Fitter(opt)", "fitter = make(opt)")
    alone, _ = roles_of(
        {"train_ddp.py": DISTRIBUTED, "library.py": library, "fit_two.py": made_elsewhere}
    )
    assert not alone


def test_modules_no_program_runs_stay_unknown() -> None:
    # `library.py`: no program imports it (its callers are outside the project).
    alone, untrained = roles_of(
        {"train_ddp.py": DISTRIBUTED, "library.py": "import torch\nx = torch.zeros(1)\n"}
    )
    assert not alone and not untrained
    # Every program single-process: what they run runs alone; a module none imports
    # stays unknown.
    alone, _ = roles_of({"train_one.py": SINGLE, "helpers.py": "", "library.py": ""})
    assert alone == {"train_one", "helpers"}


def test_modules_only_programs_that_never_train_run_are_off_training() -> None:
    files = {
        "train_ddp.py": "import model\n" + DISTRIBUTED,
        "model.py": "class M: pass\n",
        # A script in a package folder imports its sibling by its plain name.
        "tools/__init__.py": "",
        "tools/export.py": "import torch\nfrom model_export import E\n"
        "if __name__ == '__main__':\n    torch.onnx.export(E(), (), 'e.onnx')\n",
        "tools/model_export.py": "class E: pass\n",
    }
    _, untrained = roles_of(files)
    assert untrained == {"tools.export", "tools.model_export", "tools"}


def test_a_program_is_taken_for_one_that_never_trains_only_on_evidence() -> None:
    # `tools/run.py` hands its model to a framework nothing here knows (it may train
    # it) and exports nothing: its model may run in training steps.
    files = {
        "train_ddp.py": "import model\n" + DISTRIBUTED,
        "model.py": "class M: pass\n",
        "tools/__init__.py": "",
        "tools/run.py": "import somelib\nfrom model_other import E\n"
        "if __name__ == '__main__':\n    somelib.run(E())\n",
        "tools/model_other.py": "class E: pass\n",
    }
    _, untrained = roles_of(files)
    assert not untrained
    traced = files["tools/run.py"].replace("somelib.run(E())", "torch.jit.trace(E(), ())")
    files["tools/run.py"] = "import torch\n" + traced
    _, untrained = roles_of(files)
    assert untrained == {"tools.run", "tools.model_other", "tools"}


FOLDER_LAYOUTS = {
    # `python codec/train.py`: `models/net.py` imports `quantization` from `codec/`.
    "codec/train.py": "from models.net import Net\n" + DISTRIBUTED,
    "codec/models/net.py": "from quantization import vq\nimport os.path\nfrom . import x\n",
    "codec/quantization/vq.py": "import utils.io\n",
    # A module of a folder that is not a package names `codec.utils` from inside it:
    # `tools/codec/utils/io.py` is what `utils.io` is in a program run from `codec/`.
    "tools/helper.py": "import utils.io\nfrom utils import io\nimport src.lib\n",
    "tools/codec/utils/io.py": "",
    "src/lib.py": "import quantization.vq\n",
    "pkg/__init__.py": "from .inner import f\n",
    "pkg/inner.py": "import codec.models\nfrom models import net\n",
    "tools/export.py": "import helper\nif __name__ == '__main__':\n    helper.run()\n",
}


@pytest.mark.parametrize(
    "files",
    [
        FOLDER_LAYOUTS,
        {"train_ddp.py": "import helpers\n" + DISTRIBUTED, "train_one.py": SINGLE},
        generated_project(40),
    ],
)
def test_imports_by_folder_equal_the_walk_of_every_module_in_every_folder(
    files: dict[str, str],
) -> None:
    # The links keep each module's imports from no folder; they are read again only from
    # a folder that could change them: the answer for every module in every folder equals
    # the plain walk, the programs' and the reach's.
    index = index_of(files)
    summaries, resolve = index.summaries, index.resolve_module
    folders = {""} | {name.rpartition(".")[0] for name in summaries}
    folders |= {f"{folder}.{part}" for folder in folders for part in ("utils", "models", "x")}
    walked = 0
    for module in summaries:
        names = imported_names(summaries[module])
        for folder in sorted(folders):
            plain = imported_modules(resolve, module, names, folder)
            assert set(index._imports_from(module, folder, reach=False)) == plain, (module, folder)
            loose = imported(index, module, index._loose, folder, names)
            assert set(index._imports_from(module, folder, reach=True)) == loose, (module, folder)
            walked += plain != set(index._imports_from(module, "", reach=False))
    assert walked or files is not FOLDER_LAYOUTS  # some folders do change some imports


def test_a_table_of_apis_is_used_by_a_name_inside_one_of_its_prefixes_only() -> None:
    table = ("torch.optim", "deepspeed", "a.b.c")
    for name, used in [
        ("torch.optim", True),
        ("torch.optim.SGD", True),
        ("torch.optimizer", False),
        ("torch", False),
        ("deepspeed.initialize", True),
        ("deepspeedx", False),
        ("a.b", False),
        ("a.b.c.d", True),
        (".torch.optim", False),
        ("", False),
    ]:
        assert _uses_any({name}, table) is used, name
        assert _uses_any({name, "os.path"}, table) is used, name
    assert not _uses_any(set(), table)
