"""``ddplint server`` driven by a real LSP client (pygls's) over stdio, in a subprocess:
diagnostics, code actions, hover, the project model on unsaved buffers, settings."""

from __future__ import annotations

import asyncio
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from lsp_session import ServerSession, codes, drive
from lsprotocol import types

from ddplint.cache import ResultCache
from ddplint.rule import rule_docs_url

pytestmark = pytest.mark.slow

SAMPLER = textwrap.dedent(
    """\
    from torch.utils.data import DataLoader, DistributedSampler


    def train(model, dataset, epochs):
        sampler = DistributedSampler(dataset, shuffle=True)
        loader = DataLoader(dataset, batch_size=16, sampler=sampler)
        for epoch in range(epochs):
            for batch in loader:
                model(batch)
    """
)
#: A default rule's hazard (DDP303), for a run with the default settings.
NUMBER_TIMEOUT = textwrap.dedent(
    """\

    import torch.distributed as dist


    def start():
        dist.init_process_group("nccl", timeout=1800)
    """
)
UTILS = textwrap.dedent(
    """\
    import torch
    import torch.distributed as dist


    def save(model):
        torch.save(model.state_dict(), "model.pt")
    """
)
TRAIN = textwrap.dedent(
    """\
    import torch.distributed as dist

    import utils


    def main(model):
        if dist.get_rank() == 0:
            utils.save(model)
    """
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / ".git").mkdir()  # the project root; files are found by walking it
    # DDP402 (the sampler hazard these tests edit) is opt-in: the project selects it.
    (root / "pyproject.toml").write_text('[tool.ddplint]\nextend-select = ["DDP402"]\n')
    monkeypatch.setenv("DDPLINT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("DDPLINT_CACHE_KEY_FILE", str(tmp_path / "cache-key"))
    return root


def test_a_hazard_is_reported_fixed_by_its_code_action_and_the_server_exits_cleanly(
    project: Path,
) -> None:
    (project / "train.py").write_text(SAMPLER)

    async def scenario(session: ServerSession) -> None:
        uri = session.open("train.py")
        [diagnostic] = await session.diagnostics(uri, lambda found: bool(found))
        assert diagnostic.code == "DDP402"
        assert diagnostic.source == "ddplint"
        assert diagnostic.severity is not None
        assert diagnostic.code_description is not None
        assert diagnostic.code_description.href == rule_docs_url("DDP402")
        assert diagnostic.code_description.href.endswith("docs/hazards.md#ddp402")
        line = SAMPLER.splitlines()[4]
        start = line.index("DistributedSampler(")
        assert (diagnostic.range.start.line, diagnostic.range.start.character) == (4, start)
        assert (diagnostic.range.end.line, diagnostic.range.end.character) == (4, len(line))

        actions = await session.code_actions(uri, diagnostic.range)
        titles = [a.title for a in actions]
        fix = next(a for a in actions if "set_epoch" in a.title)
        assert fix.kind == types.CodeActionKind.QuickFix
        assert fix.is_preferred
        assert "unsafe" not in fix.title
        assert "Ignore DDP402 for this line" in titles
        assert any(a.kind == "source.fixAll.ddplint" for a in actions)
        assert fix.edit is not None
        session.apply(fix.edit)
        assert await session.diagnostics(uri) == []
        assert "        sampler.set_epoch(epoch)\n" in session.texts[uri]

    assert drive(project, scenario) == 0


def test_ignore_for_this_line_appends_noqa_to_the_flagged_line(project: Path) -> None:
    (project / "train.py").write_text(SAMPLER)

    async def scenario(session: ServerSession) -> None:
        uri = session.open("train.py")
        [diagnostic] = await session.diagnostics(uri, lambda found: bool(found))
        actions = await session.code_actions(
            uri, diagnostic.range, only=[types.CodeActionKind.QuickFix]
        )
        assert all(a.kind == types.CodeActionKind.QuickFix for a in actions)
        ignore = next(a for a in actions if a.title.startswith("Ignore"))
        assert ignore.edit is not None
        session.apply(ignore.edit)
        assert await session.diagnostics(uri) == []
        flagged = session.texts[uri].splitlines()[4]
        assert flagged.endswith(
            "sampler = DistributedSampler(dataset, shuffle=True)  # noqa: DDP402"
        )

    drive(project, scenario)


def test_a_json_finding_offers_no_ignore_comment(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.ddplint]\nextend-select = ["DDP611"]\n')
    (project / "ds_config.json").write_text(
        '{\n  "train_batch_size": 10,\n  "train_micro_batch_size_per_gpu": 4\n}\n'
    )

    async def scenario(session: ServerSession) -> None:
        uri = session.open("ds_config.json")
        [diagnostic] = await session.diagnostics(uri, lambda found: bool(found))
        assert diagnostic.code == "DDP611" and diagnostic.range.start.line == 1
        actions = await session.code_actions(uri, diagnostic.range)
        assert not any(a.title.startswith("Ignore") for a in actions)  # JSON has no comments

    drive(project, scenario)


def test_an_unsaved_edit_of_a_dependency_refreshes_the_dependent_file(project: Path) -> None:
    (project / "utils.py").write_text(UTILS)
    (project / "train.py").write_text(TRAIN)
    # DDP201 is opt-in since issue 23: the project selects it.
    (project / "pyproject.toml").write_text('[tool.ddplint]\nextend-select = ["DDP201"]\n')

    async def scenario(session: ServerSession) -> None:
        train = session.open("train.py")
        utils = session.open("utils.py")
        assert await session.diagnostics(train) == []
        await session.diagnostics(utils)
        session.replace(utils, UTILS + "    dist.barrier()\n")  # not saved
        found = await session.diagnostics(train, lambda found: bool(found))
        assert codes(found) == ["DDP201"]
        assert found[0].range.start.line == 6  # the rank test, naming the call below
        assert [r.location.range.start.line for r in found[0].related_information or []] == [7]
        session.replace(utils, UTILS)
        assert await session.diagnostics(train, lambda found: not found) == []

    drive(project, scenario)


def test_a_cold_session_leaves_the_project_cache_warm_for_the_next(project: Path) -> None:
    (project / "utils.py").write_text(UTILS)
    (project / "train.py").write_text(TRAIN)
    cache = project.parent / "cache"

    async def scenario(session: ServerSession) -> None:
        train = session.open("train.py")
        assert await session.diagnostics(train) == []
        for _ in range(100):  # written once the server has been quiet for a second
            if list(cache.glob("results-*.sqlite3")):
                break
            await asyncio.sleep(0.1)

    drive(project, scenario)
    [written] = cache.glob("results-*.sqlite3")
    fingerprint = written.name.removeprefix("results-").removesuffix(".sqlite3")
    entries = ResultCache(cache, fingerprint).stored()
    summaries = [key for key in entries if key.startswith("summary:")]
    assert len(summaries) == 2  # train.py and utils.py, as on disk
    check = subprocess.run(
        [sys.executable, "-m", "ddplint", "check", "train.py"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    # Everything the check needed was there: it computed nothing new. Either may record
    # the stat of the files it read from disk (the server does for those it has no buffer
    # of, when it gets to them): stats are not results.
    after = ResultCache(cache, fingerprint).stored()

    def results(stored: dict[str, object]) -> dict[str, object]:
        return {k: v for k, v in stored.items() if not k.startswith("source-stats:")}

    assert results(after) == results(entries)


NON_ASCII = textwrap.dedent(
    """\
    import torch.distributed as dist


    def save():
        if dist.get_rank() == 0:
            label = "🚀é"; dist.barrier()
    """
)


@pytest.mark.parametrize(("offered", "expected"), [(None, "utf-16"), (["utf-32"], "utf-32")])
def test_positions_count_in_the_negotiated_encoding(
    project: Path, offered: list[str] | None, expected: str
) -> None:
    (project / "save.py").write_text(NON_ASCII, encoding="utf-8")
    # DDP201 is opt-in since issue 23: the project selects it.
    (project / "pyproject.toml").write_text('[tool.ddplint]\nextend-select = ["DDP201"]\n')
    line = NON_ASCII.splitlines()[5]
    characters = line.index("dist.barrier")  # code points
    units = {"utf-16": characters + 1, "utf-32": characters}[expected]  # 🚀 is 2 in UTF-16

    async def scenario(session: ServerSession) -> None:
        assert session.encoding == expected
        uri = session.open("save.py")
        [diagnostic] = await session.diagnostics(uri, lambda found: bool(found))
        assert diagnostic.code == "DDP201"
        assert diagnostic.range.start == types.Position(4, 4)  # the rank test: the root cause
        # The barrier it keeps from the other ranks sits after the non-ASCII text.
        (skipped,) = diagnostic.related_information or []
        assert skipped.location.range.start == types.Position(5, units)
        hover = await session.hover(uri, diagnostic.range.start)
        assert hover is not None
        assert hover.contents.value.startswith("# DDP201 collective-on-some-ranks")
        assert "## What it does" in hover.contents.value
        assert await session.hover(uri, types.Position(0, 0)) is None

    drive(project, scenario, encodings=offered)


def test_a_bad_config_is_one_message_and_linting_goes_on_with_defaults(project: Path) -> None:
    pyproject = project / "pyproject.toml"
    pyproject.write_text('[tool.ddplint]\nselect = ["NOPE"]\n')
    (project / "train.py").write_text(SAMPLER + NUMBER_TIMEOUT)

    async def scenario(session: ServerSession) -> None:
        uri = session.open("train.py")
        assert codes(await session.diagnostics(uri)) == ["DDP303"]  # the defaults'
        message = await session.message()
        assert message.type == types.MessageType.Error
        assert "NOPE" in message.message
        assert "default settings" in message.message
        pyproject.write_text('[tool.ddplint]\nignore = ["DDP303"]\n')
        change = types.FileEvent(pyproject.as_uri(), types.FileChangeType.Changed)
        session.client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams([change])
        )
        session.replace(uri, session.texts[uri] + "\n")
        assert await session.diagnostics(uri) == []
        assert len(session.messages) == 1
        pyproject.write_text('[tool.ddplint]\nselect = "DDP402"\n')  # a string, not a list
        session.save(pyproject.as_uri())  # saved in the editor: read again
        session.replace(uri, session.texts[uri] + "\n")
        assert codes(await session.diagnostics(uri)) == ["DDP303"]  # the defaults again
        assert len(session.messages) == 2
        assert "`select` must be a list of strings" in session.messages[1].message

    drive(project, scenario)


def test_a_training_yaml_is_linted_and_fix_all_clears_it(project: Path) -> None:
    fixture = Path(__file__).parent.parent / "fixtures" / "rules" / "DDP601"
    (project / "train.yaml").write_text((fixture / "bad_no_workers.yaml").read_text())

    async def scenario(session: ServerSession) -> None:
        uri = session.open("train.yaml")
        found = await session.diagnostics(uri, lambda found: bool(found))
        assert codes(found) == ["DDP601"] * 3
        assert [(d.range.start.line, d.range.start.character) for d in found] == [
            (7, 4),
            (11, 4),
            (13, 39),
        ]
        actions = await session.code_actions(
            uri, types.Range(types.Position(0, 0), types.Position(0, 0)), only=["source.fixAll"]
        )
        [fix_all] = actions
        assert fix_all.kind == "source.fixAll.ddplint"
        assert fix_all.edit is not None
        session.apply(fix_all.edit)
        assert await session.diagnostics(uri) == []
        assert session.texts[uri] == (fixture / "bad_no_workers.fixed.yaml").read_text()

    drive(project, scenario)


def test_an_unsafe_fix_says_so_is_not_preferred_and_fix_all_leaves_it(project: Path) -> None:
    fixture = Path(__file__).parent.parent / "fixtures" / "rules" / "DDP602"
    text = fixture.joinpath("bad_unsynced.yaml").read_text()
    (project / "train.yaml").write_text(text)

    async def scenario(session: ServerSession) -> None:
        uri = session.open("train.yaml")
        found = await session.diagnostics(uri, lambda found: bool(found))
        assert codes(found) == ["DDP602", "DDP602"]
        everywhere = types.Range(types.Position(0, 0), types.Position(0, 0))
        assert await session.code_actions(uri, everywhere, only=["source.fixAll"]) == []
        actions = await session.code_actions(uri, found[0].range)
        fix = next(a for a in actions if not a.title.startswith("Ignore"))
        assert fix.title.endswith("(DDP602, unsafe fix)")
        assert not fix.is_preferred
        assert fix.edit is not None
        session.apply(fix.edit)
        remaining = await session.diagnostics(uri, lambda now: len(now) == 1)
        assert remaining[0].range.start.line == found[1].range.start.line
        assert "  sync_batchnorm: true  #" in session.texts[uri]

    drive(project, scenario)


def test_a_plain_text_client_that_refuses_to_watch_files_is_served_without_an_error(
    project: Path,
) -> None:
    """As Emacs's eglot meets the server: hover in plain text only, and a refused
    ``client/registerCapability`` is a logged warning, not an error shown to the user."""
    (project / "train.py").write_text(SAMPLER)
    offered = types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(
            did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(
                dynamic_registration=True
            )
        ),
        text_document=types.TextDocumentClientCapabilities(
            hover=types.HoverClientCapabilities(content_format=[types.MarkupKind.PlainText])
        ),
    )
    session = ServerSession(project, capabilities=offered)
    asked: list[types.RegistrationParams] = []

    @session.client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def refuse(params: types.RegistrationParams) -> None:
        asked.append(params)
        raise RuntimeError("cannot watch here")

    async def main() -> None:
        async with session:
            uri = session.open("train.py")
            [diagnostic] = await session.diagnostics(uri, lambda found: bool(found))
            logged = await session.log()
            assert logged.type == types.MessageType.Warning
            assert "refused to watch files" in logged.message
            hover = await session.hover(uri, diagnostic.range.start)
            assert hover.contents.kind == types.MarkupKind.PlainText
            assert hover.contents.value.startswith("# DDP402")
        assert [r.method for r in asked[0].registrations] == ["workspace/didChangeWatchedFiles"]
        assert session.messages == []

    asyncio.run(main())


def test_without_pygls_the_command_says_how_to_install_it(tmp_path: Path) -> None:
    hide = (
        "import sys; sys.modules['pygls'] = None; sys.argv = ['ddplint', 'server']; "
        "from ddplint.cli import main; main()"
    )
    result = subprocess.run(
        [sys.executable, "-c", hide], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert result.returncode == 2
    python = shlex.quote(sys.executable)
    assert f"not installed for {python}" in result.stderr
    assert f"{python} -m pip install 'pygls<3,>=2.0' 'lsprotocol>=2025.0.0'" in result.stderr
    assert "pipx inject ddplint pygls lsprotocol" in result.stderr
