"""A Hydra ``defaults:`` list read as where each composed config lands."""

from __future__ import annotations

from ddplint.config.document import ConfigDocument
from ddplint.config.hydra_defaults import DefaultsEntry, composed_at, defaults_entries
from ddplint.config.loader import load_documents
from ddplint.source import SourceFile

DEFAULTS = """defaults:
  - _self_
  - hydra: default
  - deepspeed@ds_cfg: zero2
  - override /optim: adamw
  - optional server/db: ${db_choice}
  - logger@_global_: wandb
  - base_settings
"""


def _document(text: str) -> ConfigDocument:
    source = SourceFile.decode("conf.yaml", text.encode())
    [root] = load_documents(source.text)
    return ConfigDocument(root, 0, source)


def test_each_entry_lands_at_its_package_or_group() -> None:
    assert list(defaults_entries(_document(DEFAULTS))) == [
        DefaultsEntry("hydra", "default", ("hydra",)),
        DefaultsEntry("deepspeed", "zero2", ("ds_cfg",)),
        DefaultsEntry("optim", "adamw", ("optim",)),
        DefaultsEntry("server/db", None, ("server", "db")),
        DefaultsEntry("logger", "wandb", ()),
        DefaultsEntry("", "base_settings", ()),
    ]


def test_composed_at_a_key_or_above_it() -> None:
    only_groups = _document("defaults:\n  - deepspeed@ds_cfg: zero2\n  - optim: adamw\n")
    assert composed_at(only_groups, ("ds_cfg", "zero_optimization", "stage"))
    assert not composed_at(only_groups, ("ds_eval", "zero_optimization", "stage"))
    assert not composed_at(_document("a: 1\n"), ("ds_cfg",))
    rooted = _document("defaults:\n  - base_settings\n")  # a plain name merges at the root
    assert composed_at(rooted, ("anything", "at", "all"))
