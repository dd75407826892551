"""The project-facts memo keyed by the summaries (``ddplint.code.project.memo``) and the
sources trusted by their stat (``ddplint.source_stats``): a run after an edit that
changes no summary links nothing, a file whose stat is unchanged is not read, and no
edit, deletion or rewrite under an old stat leaves stale findings: every run's findings
equal those of a cold run on the same project."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_incremental_linking import _findings, _replace, _run, make_tree
from test_project_model import DEFAULT_RULES

from ddplint import source_stats
from ddplint.cache import LayeredEntry, content_hash
from ddplint.code.project.memo import summary_digest
from ddplint.code.project.module_summary import summarize
from ddplint.engine import open_cache
from ddplint.settings import LintOptions, Settings
from ddplint.source_stats import read_stats, stats_key, stats_records


def _cold_findings(
    root: Path, linted: Path, tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> list[tuple[str, int, str, str]]:
    return _findings(_run(root, [linted], tmp_path / name, monkeypatch))


def test_a_summary_digest_is_the_same_built_or_read_back() -> None:
    import json

    summary = summarize("import torch.distributed as dist\ndef f():\n    dist.barrier()\n")
    assert summary is not None
    assert summary_digest(summary) == summary_digest(json.loads(json.dumps(summary)))
    assert summary_digest(summary) != summary_digest(summarize("def f():\n    pass\n"))


def test_an_edit_that_changes_no_summary_links_nothing(
    project: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    warm = tmp_path / "warm"
    _run(project, [project], warm, monkeypatch)
    target = project / "train_bad.py"
    target.write_text(target.read_text() + "\n# a comment\n")
    hook = _run(project, [target], warm, monkeypatch)
    assert hook.stats.summarised == 1 and hook.stats.linked == 0
    assert _findings(hook) == _cold_findings(project, target, tmp_path, "cold", monkeypatch) != []


def test_an_edit_that_changes_what_a_file_is_told_and_its_revert_give_a_cold_runs_findings(
    project: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The barrier ``train_bad`` reaches through ``utils`` goes, then comes back: the
    memo of the first state must not answer the second, and answers the third."""
    warm = tmp_path / "warm"
    target = project / "train_bad.py"
    before = _findings(_run(project, [project], warm, monkeypatch))
    original = (project / "utils.py").read_text()
    _replace("utils.py", "    dist.barrier()\n", "    pass\n")(project)
    edited = _run(project, [target], warm, monkeypatch)
    assert edited.stats.linked > 0
    assert _findings(edited) == _cold_findings(project, target, tmp_path, "cold-1", monkeypatch)
    assert not any(f[0] == "train_bad.py" for f in _findings(edited))
    (project / "utils.py").write_text(original)
    reverted = _run(project, [target], warm, monkeypatch)
    assert reverted.stats.linked == 0  # the first run's memo answers
    assert _findings(reverted) == _cold_findings(project, target, tmp_path, "cold-2", monkeypatch)
    assert any(f[0] == "train_bad.py" for f in _findings(reverted))
    assert [f for f in before if f[0] == "train_bad.py"] == [
        f for f in _findings(reverted) if f[0] == "train_bad.py"
    ]


def test_a_deleted_module_is_not_answered_from_the_memo(
    project: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    warm = tmp_path / "warm"
    target = project / "train_bad.py"
    _run(project, [project], warm, monkeypatch)
    (project / "utils.py").unlink()
    hook = _run(project, [target], warm, monkeypatch)
    assert _findings(hook) == _cold_findings(project, target, tmp_path, "cold", monkeypatch)
    assert not any(f[0] == "train_bad.py" for f in _findings(hook))


def _stats(root: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, tuple]:
    monkeypatch.setenv("DDPLINT_CACHE_DIR", str(cache))
    options = LintOptions(selected=DEFAULT_RULES, project_root=str(root))
    cache = open_cache(Settings(project_root=root), options)
    return dict(read_stats(LayeredEntry(cache, stats_key(str(root.resolve()))).merged))


def test_files_written_just_now_are_not_trusted_by_their_stat(
    project: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A file whose times are within the racy margin when read could be written again
    under the same times: its stat is not recorded, so it is read next time."""
    _run(project, [project], tmp_path / "warm", monkeypatch)
    assert "utils.py" not in _stats(project, tmp_path / "warm", monkeypatch)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return make_tree(tmp_path, monkeypatch)


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file counts as old enough to be trusted by its stat."""
    monkeypatch.setattr(source_stats, "RACY_MARGIN_NS", 0)


def test_an_unchanged_file_is_not_read_and_a_rewrite_under_its_old_times_is(
    project: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    settled: None,
) -> None:
    """``utils.py`` rewritten with the same size and its modification time set back:
    the change time moved, so it is read again and the findings follow the new text."""
    warm = tmp_path / "warm"
    target = project / "train_bad.py"
    _run(project, [project], warm, monkeypatch)
    recorded = _stats(project, warm, monkeypatch)
    assert recorded["utils.py"][1] == content_hash((project / "utils.py").read_bytes())
    reads: list[Path] = []
    real_read = source_stats.ProjectSources.__getitem__

    def counted(self: source_stats.ProjectSources, relative: str) -> bytes:
        reads.append(Path(relative))
        return real_read(self, relative)

    monkeypatch.setattr(source_stats.ProjectSources, "__getitem__", counted)
    hook = _run(project, [target], warm, monkeypatch)
    assert hook.stats.linked == 0 and Path("utils.py") not in reads

    utils = project / "utils.py"
    old = os.stat(utils)
    text = utils.read_text()
    utils.write_text(text.replace("dist.barrier()", "dist.Barrier()"))  # same size
    os.utime(utils, ns=(old.st_atime_ns, old.st_mtime_ns))
    assert os.stat(utils).st_size == old.st_size and os.stat(utils).st_mtime_ns == old.st_mtime_ns
    edited = _run(project, [target], warm, monkeypatch)
    assert _findings(edited) == _cold_findings(project, target, tmp_path, "cold", monkeypatch)
    assert not any(f[0] == "train_bad.py" for f in _findings(edited))


def test_a_record_that_no_longer_says_what_the_file_holds_is_read_afresh(
    project: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    settled: None,
) -> None:
    """The stat the record holds is the file's, its hash is another text's (as if the
    file had been rewritten under the same stat): the file is read, found to differ,
    and the project is read again; the findings are a cold run's."""
    warm = tmp_path / "warm"
    target = project / "train_bad.py"
    _run(project, [project], warm, monkeypatch)
    options = LintOptions(selected=DEFAULT_RULES, project_root=str(project))
    cache = open_cache(Settings(project_root=project), options)
    kept = LayeredEntry(cache, stats_key(str(project.resolve())))
    records = read_stats(kept.merged)
    stamp, _ = records["utils.py"]
    records["utils.py"] = (stamp, content_hash(b"another text"))
    kept.write(stats_records(records))
    cache.save()
    hook = _run(project, [target], warm, monkeypatch)
    assert _findings(hook) == _cold_findings(project, target, tmp_path, "cold", monkeypatch) != []
    assert _stats(project, warm, monkeypatch)["utils.py"][1] == content_hash(
        (project / "utils.py").read_bytes()
    )


def test_an_editors_buffer_is_linted_not_the_file_its_stat_describes(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settled: None
) -> None:
    """``utils.py`` open in an editor without its barrier (not saved; the same size):
    its record on disk says the text with the barrier; the buffer decides what
    ``train_bad.py`` is told, and the buffer's text is never recorded as the file's."""
    from ddplint.engine import lint_buffers

    warm = tmp_path / "warm"
    _run(project, [project], warm, monkeypatch)
    options = LintOptions(selected=DEFAULT_RULES, project_root=str(project))
    settings = Settings(project_root=project)
    utils, target = project / "utils.py", project / "train_bad.py"
    buffer = utils.read_text().replace("dist.barrier()", "dist.Barrier()").encode()  # same size
    buffers = {utils.resolve(): buffer, target.resolve(): target.read_bytes()}
    result = lint_buffers(buffers, settings, options, open_cache(settings, options))
    assert not any(Path(f.path).name == "train_bad.py" for f in result.findings)
    with_disk = lint_buffers({target.resolve(): target.read_bytes()}, settings, options)
    assert any(Path(f.path).name == "train_bad.py" for f in with_disk.findings)
    recorded = {hash_ for _stamp, hash_ in _stats(project, warm, monkeypatch).values()}
    assert content_hash(buffer) not in recorded
    hook = _run(project, [target], warm, monkeypatch)  # the files on disk again
    assert _findings(hook) == _cold_findings(project, target, tmp_path, "cold", monkeypatch) != []
