"""DDP218: a per-rank file-system check decides whether a collective runs (opt-in)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddplint.analysis.file_checks import file_checks_deciding_collectives
from ddplint.code.context import CodeContext
from ddplint.code.edits.ast_edits import ast_node_text
from ddplint.finding import Finding, Severity
from ddplint.needles import COLLECTIVE_CALL_NEEDLES, COLLECTIVE_NEEDLES
from ddplint.rule import CodeRule
from ddplint.rules.code.ddp214_log_dir_on_some_ranks import guard_related
from ddplint.rules.code.ddp219_ranks_part_before_collective import header_text


class FileCheckDecidesCollective(CodeRule):
    """
    ## What it does
    Flags a collective (`dist.barrier()`, a helper that runs on the main process and
    then waits for the others, ...) that runs only when a file-system check holds
    (`if not os.path.exists(prepared): run_on_main(prepare)`), and a `return` /
    `continue` / `break` on such a check before a collective. Opt-in (preview): on a
    shared file system the ranks mostly agree, so this reports a race, not a certainty.

    Only a check of a path the run writes counts (the same path handed to `torch.save`,
    `open(..., "w")`, `os.makedirs`, a `.save(...)`, or to any call made on some ranks
    only, such as `if rank == 0: prepare(path)`, unless the module's own function only
    reads it), and only where the write may land
    between the ranks' answers: after the check with no collective between them, or
    before it on some ranks only with no collective between. A path no rank writes (an
    input checkpoint, a dataset folder, an earlier run's checkpoints listed to resume)
    gives every rank the same answer, and so does a write a barrier separates from the
    check (a barrier skipped only where the job runs as one process, `if
    dist.is_initialized(): dist.barrier()`, still separates them: one process has no
    peer to race); making a folder does not change a listing of it. A write in
    another function, and a path the object holds (`self.best_model_path`, written by
    its framework base), may come at any time, unless every rank asks right after a
    collective with no call between that collective and the next one that may make
    the write (for the object's path: a method of `self` or `super()`, a call handed
    `self`, a field or the path; reading the file is no write): every rank then
    answers between the same two collectives, with nothing written between. It is
    built on the analysis core (a probe view of the divergence analysis, control
    dependence, pairing).

    Not flagged: a check whose answer was shared first (`broadcast_object_list` of the
    result, or a check made on rank 0 and broadcast); a test whose branches issue the
    same collectives; the clock and memory probes and a rank's own contribution to a
    collective (DDP219).

    ## Why is this bad?
    Each rank asks the file system at its own moment. A rank that is a little late asks
    after rank 0 has already created the file (or a partial one), or asks a node-local
    disk where the file does not exist, takes the other branch and skips the barrier
    its peers wait in: the job hangs until the timeout. NeMo's checkpoint callback hit
    exactly this with a per-rank `os.path.exists` guarding a barrier.

    ## Example
    ```python
    if not os.path.exists(manifest):
        run_on_main(prepare_data)  # rank 0 prepares, then every rank waits in a barrier
    ```

    ## Use instead
    ```python
    exists = [os.path.exists(manifest)]
    dist.broadcast_object_list(exists, src=0)  # rank 0's answer for every rank
    if not exists[0]:
        run_on_main(prepare_data)
    ```

    ## Fix safety
    No automatic fix: which rank's answer counts is the author's call.

    ## References
    - NVIDIA/NeMo issue #13739 and PR 14380 (a per-rank `os.path.exists` before a
      barrier in the checkpoint callback).
    - PyTorch docs, `torch.distributed.broadcast_object_list`.
    """

    code = "DDP218"
    name = "file-check-decides-collective"
    summary = "a per-rank file-system check decides whether a collective runs"
    severity = Severity.WARNING
    default_enabled = False
    needs_peers = True
    needles = ("exists", "isfile", "isdir", "listdir", "scandir", "glob", "is_file", "is_dir")
    also_needles = COLLECTIVE_NEEDLES
    more_needles = (COLLECTIVE_CALL_NEEDLES,)

    reads_libcst = False

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        for found in file_checks_deciding_collectives(ctx.analysis):
            check = header_text(found.guard.test)
            collective = found.collective.name
            if isinstance(found.at, (ast.Return, ast.Continue, ast.Break)):
                what = f"`{ast_node_text(ctx, found.at)}` is taken"
            else:
                what = f"`{collective}` runs"
            message = (
                f"{what} on the answer of a file-system check (`{check}`, line "
                f"{found.guard.line}) of a path this run writes: each rank asks at its own "
                "moment (or on its own node's disk), so a rank that asks after the file "
                f"appears takes the other way and the ranks part at `{collective}` (a hang "
                "until the timeout). Decide on one rank's answer shared with "
                "`broadcast_object_list`"
            )
            yield ctx.ast_finding(
                self,
                found.at,
                message,
                summary=f"a per-rank file-system check decides `{collective}`",
                related=[guard_related(found.guard), (found.collective.call, "the collective")],
            )
