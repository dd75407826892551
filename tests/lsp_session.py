"""A real LSP client (pygls's) driving ``ddplint server`` in a subprocess, for tests."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.workspace import TextDocument
from pygls.workspace.position_codec import PositionCodec

#: Generous: the test machine may be shared by many processes.
TIMEOUT = 90.0

Diagnostics = list[types.Diagnostic]


class ServerSession:
    """One server process: open documents, edit them, wait for diagnostics."""

    def __init__(
        self,
        root: Path,
        encodings: list[str] | None = None,
        capabilities: types.ClientCapabilities | None = None,
        command: Sequence[str] = ("-m", "ddplint", "server"),
    ) -> None:
        self.root = root
        self.command = command
        self.encodings = encodings
        self.offered = capabilities or types.ClientCapabilities()
        self.client = LanguageClient("ddplint-tests", "1")
        self.published: dict[str, types.PublishDiagnosticsParams] = {}
        self.messages: list[types.ShowMessageParams] = []
        self.logged: list[types.LogMessageParams] = []
        self.texts: dict[str, str] = {}
        self.versions: dict[str, int] = {}
        self.encoding = "utf-16"
        self._changed = asyncio.Condition()

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        async def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
            async with self._changed:
                self.published[params.uri] = params
                self._changed.notify_all()

        @self.client.feature(types.WINDOW_SHOW_MESSAGE)
        async def on_message(params: types.ShowMessageParams) -> None:
            async with self._changed:
                self.messages.append(params)
                self._changed.notify_all()

        @self.client.feature(types.WINDOW_LOG_MESSAGE)
        async def on_log(params: types.LogMessageParams) -> None:
            async with self._changed:
                self.logged.append(params)
                self._changed.notify_all()

    async def __aenter__(self) -> ServerSession:
        await self.client.start_io(sys.executable, *self.command, cwd=self.root)
        general = types.GeneralClientCapabilities(position_encodings=self.encodings)
        capabilities = attrs.evolve(self.offered, general=general)
        answer = await asyncio.wait_for(
            self.client.initialize_async(
                types.InitializeParams(
                    capabilities=capabilities, root_uri=self.root.as_uri(), process_id=None
                )
            ),
            TIMEOUT,
        )
        self.capabilities = answer.capabilities
        self.encoding = str(answer.capabilities.position_encoding or "utf-16")
        self.client.initialized(types.InitializedParams())
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.wait_for(self.client.shutdown_async(None), TIMEOUT)
        self.client.exit(None)
        await asyncio.wait_for(self.client.stop(), TIMEOUT)

    @property
    def exit_code(self) -> int | None:
        server = self.client._server
        return server.returncode if server is not None else None

    def kill(self) -> None:
        """End the server process if it is still running (a test that failed)."""
        server = self.client._server
        if server is not None and server.returncode is None:
            server.kill()

    def uri(self, name: str) -> str:
        return (self.root / name).resolve().as_uri()

    def open(self, name: str, text: str | None = None) -> str:
        text = (self.root / name).read_text(encoding="utf-8") if text is None else text
        return self.open_uri(self.uri(name), text)

    def open_uri(self, uri: str, text: str) -> str:
        """Open a document by its URI, as the editor names it."""
        self.texts[uri], self.versions[uri] = text, 1
        language = "python" if uri.endswith(".py") else "yaml"
        item = types.TextDocumentItem(uri, language, 1, text)
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(item))
        return uri

    def replace(self, uri: str, text: str) -> None:
        """Send the document's whole new text as a change."""
        self.versions[uri] += 1
        self.texts[uri] = text
        document = types.VersionedTextDocumentIdentifier(version=self.versions[uri], uri=uri)
        change = types.TextDocumentContentChangeWholeDocument(text)
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(document, [change]))

    def apply(self, edit: types.WorkspaceEdit) -> None:
        """Apply a workspace edit to the open documents, as an editor would."""
        for uri, edits in (edit.changes or {}).items():
            document = TextDocument(
                uri, self.texts[uri], position_codec=PositionCodec(self.encoding)
            )
            ordered = sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character))
            for text_edit in reversed(ordered):
                change = types.TextDocumentContentChangePartial(text_edit.range, text_edit.new_text)
                document.apply_change(change)
            self.replace(uri, document.source)

    def save(self, uri: str) -> None:
        self.client.text_document_did_save(
            types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri))
        )

    async def diagnostics(
        self, uri: str, until: Callable[[Diagnostics], bool] = lambda _: True
    ) -> Diagnostics:
        """The diagnostics published for the document's current version once ``until``
        holds for them (a run for an older version does not count)."""

        def ready() -> bool:
            params = self.published.get(uri)
            return (
                params is not None
                and params.version == self.versions.get(uri)
                and until(params.diagnostics)
            )

        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(ready), TIMEOUT)
        return list(self.published[uri].diagnostics)

    async def message(self) -> types.ShowMessageParams:
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(lambda: bool(self.messages)), TIMEOUT)
        return self.messages[0]

    async def log(self) -> types.LogMessageParams:
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(lambda: bool(self.logged)), TIMEOUT)
        return self.logged[0]

    async def code_actions(
        self, uri: str, at: types.Range, only: list[str] | None = None
    ) -> list[types.CodeAction]:
        context = types.CodeActionContext(diagnostics=[], only=only)
        params = types.CodeActionParams(types.TextDocumentIdentifier(uri), at, context)
        found = await asyncio.wait_for(self.client.text_document_code_action_async(params), TIMEOUT)
        return [a for a in found or [] if isinstance(a, types.CodeAction)]

    async def hover(self, uri: str, at: types.Position) -> Any:
        params = types.HoverParams(types.TextDocumentIdentifier(uri), at)
        return await asyncio.wait_for(self.client.text_document_hover_async(params), TIMEOUT)


def codes(diagnostics: Diagnostics) -> list[str]:
    return sorted(str(d.code) for d in diagnostics)


def drive(root: Path, scenario: Callable[[ServerSession], Awaitable[None]], **options) -> int:
    """Run ``scenario`` against a fresh server; the server's exit code after shutdown."""

    async def main() -> int | None:
        async with ServerSession(root, **options) as session:
            await scenario(session)
        return session.exit_code

    code = asyncio.run(main())
    assert code is not None
    return code
