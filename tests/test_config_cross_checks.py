"""Config rules that read code facts: one run over a repo hands what the Python files
show (metrics logged with or without sync_dist, rank-0-only encoder calls) to the YAML
rules; the YAML cache follows the facts."""

from __future__ import annotations

from pathlib import Path

import pytest

from ddplint.code.fact_collectors import COLLECTORS, collect_facts
from ddplint.code_facts import METRIC_LOGS, RANK_ZERO_CALLS
from ddplint.engine import lint_paths
from ddplint.settings import LintOptions, Settings

LIGHTNING_CONFIG = """\
trainer:
  devices: 4
  callbacks:
    - class_path: lightning.pytorch.callbacks.ModelCheckpoint
      init_args:
        monitor: val_loss
        filename: "{epoch}-{val_loss:.3f}"
"""
NEMO_CONFIG = """\
name: NEST
model:
  encoder:
    _target_: nemo.collections.asr.modules.ConformerEncoder
trainer:
  devices: 8
  strategy: ddp
  sync_batchnorm: true
exp_manager:
  checkpoint_callback_params:
    monitor: val_loss
    filename: '${name}--{val_loss:.3f}-{step}'
"""
MODEL = """\
import lightning.pytorch as pl


class SSLModel(pl.LightningModule):
    def validation_step(self, batch, batch_idx):
        loss = self(batch)
        self.log("val_loss", loss{sync})
        return loss
"""
CALLBACK = """\
from lightning.pytorch.callbacks import Callback


class TranscribeSamples(Callback):
    def on_validation_epoch_end(self, trainer, pl_module):
        if trainer.is_global_zero:
            pl_module.transcribe(["sample.wav"], batch_size=1)
"""


def run(root: Path, *, use_cache: bool = False, select: tuple[str, ...] = ("DDP603", "DDP605")):
    settings = Settings(project_root=root)
    options = LintOptions(selected=select, project_root=str(root))
    return lint_paths([str(root)], settings, options, jobs=1, use_cache=use_cache)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DDPLINT_CACHE_DIR", str(tmp_path / ".cache"))
    (tmp_path / "configs").mkdir()
    (tmp_path / "model").mkdir()
    return tmp_path


def test_metric_logged_without_sync_dist_is_cited(repo: Path) -> None:
    (repo / "configs" / "train.yaml").write_text(LIGHTNING_CONFIG)
    (repo / "model" / "ssl.py").write_text(MODEL.format(sync=""))
    (finding,) = run(repo).findings
    assert finding.rule == "DDP605" and (finding.line, finding.column) == (7, 9)
    assert finding.key_path == "trainer.callbacks[0].init_args.filename"
    assert "logged without `sync_dist=True` (model/ssl.py:7)" in finding.message


def test_without_code_evidence_lightning_config_is_quiet(repo: Path) -> None:
    (repo / "configs" / "train.yaml").write_text(LIGHTNING_CONFIG)
    assert run(repo).findings == []


def test_code_that_syncs_the_metric_overrides_nemo_default(repo: Path) -> None:
    (repo / "configs" / "nest.yaml").write_text(NEMO_CONFIG)
    assert [f.rule for f in run(repo).findings] == ["DDP605"]  # ModelPT default
    (repo / "model" / "ssl.py").write_text(MODEL.format(sync=", sync_dist=True"))
    assert run(repo).findings == []


def test_rank_zero_transcribe_makes_default_sync_a_hang(repo: Path) -> None:
    (repo / "configs" / "nest.yaml").write_text(NEMO_CONFIG.replace("{val_loss:.3f}-", ""))
    assert run(repo).findings == []
    (repo / "model" / "callbacks.py").write_text(CALLBACK)
    (finding,) = run(repo).findings
    assert finding.rule == "DDP603" and finding.key_path == "model.encoder.sync_max_audio_length"
    assert (
        "`pl_module.transcribe(...)` runs on rank 0 only (model/callbacks.py:7)" in finding.message
    )


def test_yaml_cache_follows_the_code_facts(repo: Path) -> None:
    (repo / "configs" / "train.yaml").write_text(LIGHTNING_CONFIG)
    model = repo / "model" / "ssl.py"
    model.write_text(MODEL.format(sync=""))
    first = run(repo, use_cache=True)
    assert [f.rule for f in first.findings] == ["DDP605"] and first.stats.cached == 0
    again = run(repo, use_cache=True)
    assert again.findings == first.findings and again.stats.cached == 2
    model.write_text(MODEL.format(sync=", sync_dist=True"))  # the YAML did not change
    after = run(repo, use_cache=True)
    assert after.findings == [] and after.stats.cached == 0


def test_facts_are_collected_only_when_a_config_rule_needs_them(repo: Path) -> None:
    (repo / "model" / "ssl.py").write_text(MODEL.format(sync=""))
    result = run(repo)  # no YAML at all: the Python file is not even parsed
    assert result.stats.parsed == 0 and result.stats.prefiltered == 1


def _facts(kind: str, text: str) -> list[dict[str, object]]:
    return collect_facts(text, [COLLECTORS[kind]]).get(kind, [])


def test_metric_log_facts() -> None:
    records = _facts(
        METRIC_LOGS,
        "class M:\n"
        "    def validation_step(self, b, i):\n"
        "        self.log('val_loss', 1.0, sync_dist=True)\n"
        "        self.log_dict({'val_wer': 1, 'x': 2}, sync_dist=self.multi)\n"
        "        pl_module.log(name='acc', value=1)\n"
        "        self.log_dict(dict(lr=1))\n"
        "        self.log(f'{prefix}_loss', 1)\n"
        "        logger.log('not a metric')\n"
        "        torch.log(x)\n"
        "        lit.log('seen', v, sync_dist=True)\n"
        "        trainer.lightning_module.log_dict({'deep': v}, **kw)\n"
        "        logger.log('INFO', 'a message')\n"
        "        logging.log(logging.INFO, 'a message')\n"
        "        mlflow.log_dict({'artifact': 1}, 'params.json')\n"
        "        run.log('tracker', 1, step=3)\n",
    )
    assert [(r["metric"], r["sync_dist"], r["line"]) for r in records] == [
        ("val_loss", True, 3),
        ("val_wer", None, 4),
        ("x", None, 4),
        ("acc", False, 5),
        ("lr", False, 6),
        ("seen", True, 10),
        ("deep", None, 11),
    ]


def test_rank_zero_call_facts() -> None:
    records = _facts(
        RANK_ZERO_CALLS,
        "import os\n"
        "from lightning.pytorch.utilities import rank_zero_only\n"
        "def a(model, trainer):\n"
        "    if trainer.global_rank == 0:\n"
        "        model.transcribe(['x.wav'])\n"
        "    else:\n"
        "        model.encoder(x)\n"
        "    model.transcribe(['y.wav'])\n"
        "    if int(os.environ['LOCAL_RANK']) == 0:\n"
        "        model.encoder(y)\n"
        "@rank_zero_only\n"
        "def b(model):\n"
        "    model.transcribe(['z.wav'])\n"
        "def c(model, world_size):\n"
        "    if world_size > 1:\n"
        "        model.transcribe(['w.wav'])\n",
    )
    assert [(r["call"], r["line"]) for r in records] == [
        ("model.transcribe(...)", 5),
        ("model.encoder(...)", 7),
        ("model.encoder(...)", 10),
        ("model.transcribe(...)", 13),
    ]


def test_a_file_that_does_not_parse_gives_no_facts() -> None:
    assert collect_facts("def f(:\n    self.log('val_loss', 1)\n", list(COLLECTORS.values())) == {}


def test_metric_logged_both_ways_cannot_be_decided(repo: Path) -> None:
    (repo / "configs" / "nest.yaml").write_text(NEMO_CONFIG)
    (repo / "model" / "ssl.py").write_text(MODEL.format(sync=""))
    (repo / "model" / "tts.py").write_text(MODEL.format(sync=", sync_dist=True"))
    assert run(repo).findings == []


def test_test_files_are_no_evidence(repo: Path) -> None:
    (repo / "configs" / "train.yaml").write_text(LIGHTNING_CONFIG)
    (repo / "tests").mkdir()
    (repo / "tests" / "check_ranks.py").write_text(MODEL.format(sync=""))
    (repo / "model" / "test_model.py").write_text(MODEL.format(sync=""))
    assert run(repo).findings == []


RANK_LOCAL_MODEL = """\
import lightning.pytorch as pl


class SSLModel(pl.LightningModule):
    def validation_step(self, batch, batch_idx):
        loss = self(batch)
        self.log("val_loss", loss, sync_dist=True, rank_zero_only=True)
        if self.trainer.is_global_zero:
            self.log("val_wer", loss)
        return loss
"""
HYDRA_CALLBACKS = """\
model_checkpoint:
  _target_: lightning.pytorch.callbacks.ModelCheckpoint
  monitor: val_loss
early_stopping:
  _target_: lightning.pytorch.callbacks.EarlyStopping
  monitor: val_wer
lr_monitor:
  _target_: lightning.pytorch.callbacks.LearningRateMonitor
"""


def test_a_monitored_metric_logged_rank_locally_is_cited(repo: Path) -> None:
    (repo / "configs" / "callbacks.yaml").write_text(HYDRA_CALLBACKS)
    (repo / "model" / "ssl.py").write_text(RANK_LOCAL_MODEL)
    found = run(repo, select=("DDP616",)).findings
    assert [(f.rule, f.key_path) for f in found] == [
        ("DDP616", "model_checkpoint.monitor"),
        ("DDP616", "early_stopping.monitor"),
    ]
    assert "model/ssl.py:7: it passes `rank_zero_only=True`" in found[0].message
    assert "the rank test `self.trainer.is_global_zero` (line 8)" in found[1].message


def test_a_monitor_on_a_metric_every_rank_logs_is_quiet(repo: Path) -> None:
    (repo / "configs" / "train.yaml").write_text(LIGHTNING_CONFIG)
    (repo / "model" / "ssl.py").write_text(MODEL.format(sync=", sync_dist=True"))
    assert run(repo, select=("DDP616",)).findings == []
    single = LIGHTNING_CONFIG.replace("devices: 4", "devices: 1")
    (repo / "configs" / "train.yaml").write_text(single)
    (repo / "model" / "ssl.py").write_text(RANK_LOCAL_MODEL)
    assert run(repo, select=("DDP616",)).findings == []


def test_nemo_checkpoint_monitor_on_a_rank_local_metric(repo: Path) -> None:
    (repo / "configs" / "nest.yaml").write_text(NEMO_CONFIG)
    (repo / "model" / "ssl.py").write_text(RANK_LOCAL_MODEL)
    (finding,) = run(repo, select=("DDP616",)).findings
    assert finding.key_path == "exp_manager.checkpoint_callback_params.monitor"
