"""Lightning callbacks found by allocation, and metric logs that stay rank-local."""

from __future__ import annotations

import ast
import textwrap

from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.lightning_monitors import LightningMonitors, lightning_callback


def _monitors(source: str) -> LightningMonitors:
    return LightningMonitors(ModuleAnalysis(ast.parse(textwrap.dedent(source))))


def test_callbacks_are_known_by_their_import_not_their_name() -> None:
    found = _monitors(
        """
        from lightning.pytorch.callbacks import EarlyStopping as Stop
        from pytorch_lightning.callbacks.model_checkpoint import ModelCheckpoint
        from mylib import ModelCheckpoint as Other

        checkpoint = ModelCheckpoint("ckpt", None, "val_loss")
        stop = Stop("val_acc", mode="max")
        other = Other(monitor="train_loss")
        """
    )
    assert [(m.key, m.callback) for m in found.monitors] == [
        ("val_loss", "ModelCheckpoint"),
        ("val_acc", "EarlyStopping"),
    ]
    assert lightning_callback("lightning.pytorch.callbacks.ModelCheckpoint") == "ModelCheckpoint"
    assert lightning_callback("keras.callbacks.ModelCheckpoint") is None


def test_a_subclass_hands_its_monitor_to_super() -> None:
    found = _monitors(
        """
        from lightning.pytorch.callbacks import ModelCheckpoint

        class Best(ModelCheckpoint):
            def __init__(self):
                super().__init__(dirpath="out", monitor="val/minADE6")

        callbacks = [Best()]
        """
    )
    assert [m.key for m in found.monitors] == ["val/minADE6"]


LOGS = """
import lightning as L
import torch.distributed as dist
import torchmetrics
from lightning.pytorch.utilities import rank_zero_only

class Model(L.LightningModule):
    def __init__(self):
        self.acc = torchmetrics.Accuracy(task="binary")

    def training_step(self, batch, i):
        loss = batch.sum()
        self.log("plain", loss, sync_dist=True)
        self.log("local", loss, rank_zero_only=True)
        dist.all_reduce(loss)
        self.log("agreed", loss, rank_zero_only=True)
        self.log("metric", self.acc.compute(), rank_zero_only=True)
        if self.global_rank == 0:
            self.log("guarded", loss)
        if batch.numel() > 0:
            self.log("data_test", loss)
        self.helper()

    def on_validation_epoch_end(self):
        if self.trainer.is_global_zero:
            self._report()

    def _report(self):
        self.log("via_helper", 1.0)

    def helper(self):
        self.log("helper_everywhere", 1.0)

    @rank_zero_only
    def on_test_epoch_end(self):
        self.log("decorated", 1.0)

class Child(Model):
    def validation_step(self, batch, i):
        self.log("child", batch.sum(), rank_zero_only=True)
"""


def test_rank_local_logs_and_why() -> None:
    found = _monitors(LOGS)
    local = {log.key: log.on_some_ranks for log in found.logs}
    assert local == {
        "local": False,
        "guarded": True,
        "via_helper": True,
        "decorated": True,
        "child": False,
    }


def test_a_key_logged_on_every_rank_somewhere_is_not_rank_local() -> None:
    found = _monitors(
        LOGS
        + """
    def on_train_epoch_end(self):
        self.log("local", 0.0)
"""
    )
    assert found.rank_local("local") == []
    assert [log.key for log in found.rank_local("guarded")] == ["guarded"]


def test_schedule_values_and_nemo_models() -> None:
    found = _monitors(
        """
        from nemo.collections.nlp.models.language_modeling.megatron_gpt_model import (
            MegatronGPTModel,
        )

        class Policy(MegatronGPTModel):
            def training_step(self, batch, i):
                loss = batch.sum()
                self.log("reduced_train_loss", loss, rank_zero_only=True)
                self.log("global_step", float(self.trainer.global_step), rank_zero_only=True)
                self.log("lr", self._optimizer.param_groups[0]["lr"], rank_zero_only=True)
        """
    )
    assert [log.key for log in found.logs] == ["reduced_train_loss"]


def test_lightning_module_classes_are_known_by_their_bases_through_the_module() -> None:
    """One reading of which classes are LightningModules, for every question: a Lightning
    or NeMo model base, also through a base class of the module; never a plain module or
    a class whose bases are unknown."""
    source = textwrap.dedent(
        """
        import lightning.pytorch as pl
        import torch.nn as nn
        from nemo.collections.asr.models import EncDecCTCModel
        from elsewhere import Unknown

        class Base(pl.LightningModule): ...
        class Derived(Base): ...
        class Asr(EncDecCTCModel): ...
        class Net(nn.Module): ...
        class Other(Unknown): ...
        class Mixed(Unknown, pl.LightningModule): ...
        """
    )
    analysis = ModuleAnalysis(ast.parse(source))
    found = {cls.name for cls in analysis.objects.lightning_classes}
    assert found == {"Base", "Derived", "Asr", "Mixed"}
