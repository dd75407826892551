"""The LSP wiring: which messages the server answers and what each one does.

Documents are kept by pygls (incremental sync); every open/change/save/close asks the
scheduler for a lint of all open documents (so a document whose dependency changed is
refreshed too); diagnostics are published for documents still at the linted version.
A settings file (``pyproject.toml``, requirements files: saved, or changed on disk) makes
every project's settings be read again; a bad one is one ``window/showMessage`` error,
and linting goes on with the default settings. The lifecycle is LSP's: a request after
``shutdown`` is an InvalidRequest error, ``exit`` without it ends with code 1.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidRequest
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import to_fs_path

from ddplint import __version__
from ddplint.server.actions import FIX_ALL, code_actions, hover
from ddplint.server.diagnostics import error_diagnostic, finding_diagnostic, notice_diagnostic
from ddplint.server.documents import (
    DocumentResult,
    LintRun,
    ProjectLinter,
    Snapshot,
    usable_path,
)
from ddplint.server.framing import DROPPED, MAX_MESSAGE_BYTES
from ddplint.server.memory import collect_and_freeze, frozen_after
from ddplint.server.scheduling import LintScheduler

#: Files that shape the settings or the options (the torch floor, Lightning pins).
SETTINGS_FILES = (
    "pyproject.toml",
    "setup.cfg",
    "requirements*.txt",
    "environment.yaml",
    "environment.yml",
)
#: Files whose change on disk may change a lint result: those, and the project's code.
WATCHED = ("**/*.py", *(f"**/{name}" for name in SETTINGS_FILES))


class DdplintProtocol(LanguageServerProtocol):
    """pygls's protocol, answering a request that comes after ``shutdown`` with an
    InvalidRequest error, as LSP asks (pygls drops it: a client awaiting it would hang)."""

    def handle_message(self, message: Any) -> None:
        method = getattr(message, "method", None)
        request_id = getattr(message, "id", None)
        if self._shutdown and method not in (None, types.EXIT) and request_id is not None:
            refusal = JsonRpcInvalidRequest("the server is shut down; only `exit` is accepted")
            self._send_response(request_id, error=refusal.to_response_error())
            return
        super().handle_message(message)


class DdplintServer(LanguageServer):
    """The open documents' results and the scheduler that refreshes them."""

    def __init__(self) -> None:
        super().__init__("ddplint", __version__, protocol_cls=DdplintProtocol)
        #: Set by ``shutdown``; ``exit`` before it ends the process with code 1 (LSP).
        self.shut_down = False
        #: The process's exit code once the client is gone.
        self.exit_code = 0
        self.linter = ProjectLinter()
        self.results: dict[str, DocumentResult] = {}
        self.scheduler: LintScheduler[list[Snapshot], LintRun] = LintScheduler(
            self.snapshot,
            frozen_after(self.linter.lint),
            self.publish,
            self.report_failure,
            tidy=self.tidy,
        )
        self._shown: set[str] = set()

    def tidy(self) -> None:
        """When the server is quiet: the first results into the caches of the workspace's
        projects, then a garbage collection."""
        self.linter.write_back(self.workspace_folders())
        collect_and_freeze()

    def workspace_folders(self) -> list[Path]:
        """The editor's workspace folders (and root) that are local folders."""
        uris = [folder.uri for folder in list(self.workspace.folders.values())]
        uris.append(self.workspace.root_uri or "")
        folders = []
        for uri in uris:
            path = to_fs_path(uri) if uri.startswith("file:") else None
            if path is not None:
                resolved, problem = usable_path(path)
                if problem is None:
                    folders.append(resolved)
        return folders

    @property
    def encoding(self) -> str:
        return str(self.workspace.position_encoding or types.PositionEncodingKind.Utf16)

    @property
    def hover_format(self) -> types.MarkupKind:
        """Markdown unless the client lists the formats it shows and Markdown is not one."""
        text = self.client_capabilities.text_document
        offered = text.hover.content_format if text and text.hover else None
        if offered and types.MarkupKind.Markdown not in offered:
            return types.MarkupKind.PlainText
        return types.MarkupKind.Markdown

    def snapshot(self) -> list[Snapshot]:
        """The open documents that are files, as they are now (one whose path cannot be
        used carries the reason, and only it fails)."""
        taken = []
        for document in list(self.workspace.text_documents.values()):
            path = to_fs_path(document.uri)
            if path is not None and document.uri.startswith("file:"):
                resolved, problem = usable_path(path)
                taken.append(
                    Snapshot(document.uri, resolved, document.version, document.source, problem)
                )
        return taken

    def is_current(self, uri: str, version: int | None) -> bool:
        """Whether the document is open and still at ``version``."""
        document = self.workspace.text_documents.get(unquote(uri))
        return document is not None and document.version == version

    def publish(self, run: LintRun) -> None:
        """Diagnostics for each result whose document is still at the linted version;
        each settings problem shown once (until the settings change)."""
        for problem in run.problems:
            self.show_once(problem)
        for uri, result in run.results.items():
            if not self.is_current(uri, result.snapshot.version):
                continue  # changed or closed since: a newer run is on its way
            self.results[uri] = result
            diagnostics = [
                finding_diagnostic(result.lines, f, self.encoding, uri) for f in result.findings
            ]
            diagnostics += [error_diagnostic(result.lines, e, self.encoding) for e in result.errors]
            diagnostics += [
                notice_diagnostic(result.lines, n, self.encoding) for n in result.notices
            ]
            self.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri, diagnostics, result.snapshot.version)
            )

    def show_once(self, message: str) -> None:
        if message not in self._shown:
            self._shown.add(message)
            self.window_show_message(types.ShowMessageParams(types.MessageType.Error, message))

    def report_failure(self, error: Exception) -> None:
        """A run that failed (a bug of ours): said once; the next change tries again."""
        self.show_once(f"ddplint: internal error while linting: {type(error).__name__}: {error}")

    def settings_changed(self) -> None:
        self.linter.forget_settings()
        self._shown.clear()
        self.scheduler.request()

    def current_result(self, uri: str) -> DocumentResult | None:
        """The document's result if it is still at the version that was linted."""
        result = self.results.get(uri)
        if result is None or not self.is_current(uri, result.snapshot.version):
            return None
        return result


def _is_settings_file(uri: str) -> bool:
    name = unquote(uri.rsplit("/", 1)[-1])
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in SETTINGS_FILES)


def build_server() -> DdplintServer:
    """A server with every feature registered."""
    server = DdplintServer()

    @server.feature(types.INITIALIZED)
    async def initialized(ls: DdplintServer, params: types.InitializedParams) -> None:
        watched = ls.client_capabilities.workspace
        dynamic = watched and watched.did_change_watched_files
        if not (dynamic and dynamic.dynamic_registration):
            return
        options = types.DidChangeWatchedFilesRegistrationOptions(
            watchers=[types.FileSystemWatcher(glob_pattern=glob) for glob in WATCHED]
        )
        registration = types.Registration(
            id="ddplint-watched-files",
            method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
            register_options=options,
        )
        try:
            await ls.client_register_capability_async(types.RegistrationParams([registration]))
        except JsonRpcException as refused:
            ls.window_log_message(
                types.LogMessageParams(
                    types.MessageType.Warning,
                    f"ddplint: the editor refused to watch files ({refused}); settings and "
                    "files changed outside the editor are read again when a file is saved",
                )
            )

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: DdplintServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.linter.forget_files()  # a new file, perhaps
        ls.scheduler.request(delay=0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: DdplintServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.scheduler.request()

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: DdplintServer, params: types.DidSaveTextDocumentParams) -> None:
        if _is_settings_file(params.text_document.uri):
            ls.settings_changed()
        else:
            ls.linter.forget_files()  # saved for the first time, perhaps
            ls.scheduler.request()

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: DdplintServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.results.pop(uri, None)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri, []))
        ls.scheduler.request()  # the others now see the file as it is on disk

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched_files(ls: DdplintServer, params: types.DidChangeWatchedFilesParams) -> None:
        if any(_is_settings_file(change.uri) for change in params.changes):
            ls.settings_changed()
            return
        if any(change.type != types.FileChangeType.Changed for change in params.changes):
            ls.linter.forget_files()
        ls.scheduler.request()

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL],
            resolve_provider=False,
        ),
    )
    def code_action(ls: DdplintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        result = ls.current_result(params.text_document.uri)
        if result is None:
            return []
        return code_actions(result, params.range, ls.encoding, params.context.only)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover_request(ls: DdplintServer, params: types.HoverParams) -> types.Hover | None:
        result = ls.current_result(params.text_document.uri)
        if result is None:
            return None
        return hover(result, params.position, ls.encoding, ls.hover_format)

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: DdplintServer, params: None) -> None:
        ls.shut_down = True
        ls.scheduler.close()

    @server.feature(types.EXIT)
    def exit_now(ls: DdplintServer, params: None) -> None:
        ls.exit_code = 0 if ls.shut_down else 1
        ls.scheduler.close()  # a lint under way stops; ``serve`` does not wait for it

    @server.feature(DROPPED)
    def dropped(ls: DdplintServer, params: Any) -> None:
        size = getattr(params, "size", "?")
        limit = MAX_MESSAGE_BYTES // (1024 * 1024)
        ls.show_once(
            f"ddplint: a message of {size} bytes from the editor was ignored "
            f"(above the {limit} MiB limit)"
        )

    return server
