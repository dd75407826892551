"""The runtime facts the config rules' messages state, checked against the installed
torch / Lightning (skipped where they are not installed)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")


def test_ddp601_dataloader_refuses_persistent_workers_without_workers() -> None:
    dataset = torch.utils.data.TensorDataset(torch.zeros(4, 1))
    with pytest.raises(ValueError, match="persistent_workers option needs num_workers > 0"):
        torch.utils.data.DataLoader(dataset, num_workers=0, persistent_workers=True)


@pytest.mark.slow
@pytest.mark.parametrize(("strategy", "fails"), [("ddp", True), ("auto", False)])
def test_ddp606_sync_batchnorm_on_cpu(strategy: str, fails: bool) -> None:
    pl = pytest.importorskip("lightning.pytorch")

    class Model(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = torch.nn.Sequential(torch.nn.Conv1d(4, 4, 1), torch.nn.BatchNorm1d(4))

        def training_step(self, batch, batch_idx):  # type: ignore[no-untyped-def]
            return self.net(batch[0]).mean()

        def configure_optimizers(self):  # type: ignore[no-untyped-def]
            return torch.optim.SGD(self.parameters(), lr=0.1)

    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.randn(8, 4, 8)), batch_size=4
    )
    trainer = pl.Trainer(
        accelerator="cpu",
        devices=1,
        strategy=strategy,
        sync_batchnorm=True,
        max_steps=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    if fails:
        with pytest.raises(ValueError, match="SyncBatchNorm layers only work with GPU modules"):
            trainer.fit(Model(), loader)
    else:
        trainer.fit(Model(), loader)
