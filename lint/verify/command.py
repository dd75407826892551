"""``ddplint verify``: the click command (a thin layer over the verifier and its report)."""

from __future__ import annotations

import math
import os
import sys

import click

from ddplint.settings import Settings

#: Longest hang window accepted (a week): torch turns the process-group timeout into
#: whole milliseconds, so an unbounded one (``inf``, ``1e308``) crashes every rank.
MAX_TIMEOUT = 7 * 24 * 3600.0


def _finite(value: float) -> float:
    """``FloatRange`` lets NaN through (every comparison with NaN is false)."""
    if math.isnan(value):
        raise click.BadParameter("must be a number of seconds, not nan")
    return value


def rank_rule_settings(start: str) -> Settings:
    """The rank-divergence rules (DDP2xx), preview ones included: several are opt-in
    since issue 23, and a run (or a dump) is how their findings are confirmed. DDP210
    is retired (DDP219 asks its question on the analysis core). DDP220 (an async handle
    not waited) is no divergence between ranks: a run cannot confirm it."""
    from ddplint.invocation import build_settings

    return build_settings((start,), None, (), ("DDP2",), ("DDP210", "DDP220"), True)


@click.command(name="verify")
@click.argument("entry")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.option(
    "--nproc-per-node",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="Ranks on this machine.",
)
@click.option("--nnodes", default=None, help="Machines (torchrun's --nnodes, e.g. 2 or 1:4).")
@click.option("--node-rank", type=click.IntRange(min=0), default=None, help="This machine's rank.")
@click.option("--rdzv-endpoint", default=None, help="host:port of the rendezvous (multi-node).")
@click.option("--rdzv-id", default=None, help="Job id shared by every node (multi-node).")
@click.option("--rdzv-backend", default="c10d", show_default=True)
@click.option(
    "--backend",
    type=click.Choice(["auto", "gloo", "nccl"]),
    default="auto",
    show_default=True,
    help="auto: NCCL with one GPU per rank when the GPUs are there, gloo otherwise. "
    "gloo/nccl also replace the backend the code asks for.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.5, max=MAX_TIMEOUT),
    callback=lambda _context, _parameter, value: _finite(value),
    default=60.0,
    show_default=True,
    help="Seconds without progress that make a hang; the process-group timeout is set "
    "a little past it.",
)
@click.option(
    "--checksum", is_flag=True, help="Hash the model parameters at exit and compare ranks."
)
@click.option(
    "--trace-dir",
    type=click.Path(file_okay=False),
    help="Keep the run's traces in a new sub-folder of this folder (default: a temporary "
    "folder, removed when clean); nothing already there is touched. On several machines, "
    "a shared folder (with the same --rdzv-id) lets one report see every rank.",
)
@click.option("--show-output", is_flag=True, help="Let the ranks print to the terminal.")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
)
def verify(
    entry: str,
    args: tuple[str, ...],
    nproc_per_node: int,
    nnodes: str | None,
    node_rank: int | None,
    rdzv_endpoint: str | None,
    rdzv_id: str | None,
    rdzv_backend: str,
    backend: str,
    timeout: float,
    checksum: bool,
    trace_dir: str | None,
    show_output: bool,
    output_format: str,
) -> None:
    """Run ENTRY (a script, or module:function) on several ranks under torchrun, record
    every collective of every rank, stop a hang with every rank's stack, and tell where
    the ranks diverged and which static findings that confirms. Arguments for ENTRY go
    after `--`."""
    from ddplint.invocation import EXIT_ERROR, build_options
    from ddplint.settings import SettingsError
    from ddplint.verify import verifier
    from ddplint.verify.launch import LaunchSpec
    from ddplint.verify.report import render_json, render_text

    spec = LaunchSpec(
        entry=entry,
        args=args,
        nproc_per_node=nproc_per_node,
        nnodes=nnodes,
        node_rank=node_rank,
        rdzv_backend=rdzv_backend,
        rdzv_endpoint=rdzv_endpoint,
        rdzv_id=rdzv_id,
        backend=backend,
        timeout=timeout,
        checksum=checksum,
        run_dir=os.path.abspath(trace_dir) if trace_dir else "",
        show_output=show_output,
    )
    try:
        settings = rank_rule_settings(entry if os.path.exists(entry) else ".")
        result = verifier.run(spec, settings, build_options(settings))
    except (verifier.VerifyError, SettingsError) as exc:
        click.echo(f"ddplint: error: {exc}", err=True)
        sys.exit(EXIT_ERROR)
    click.echo(render_json(result) if output_format == "json" else render_text(result), nl=False)
    if result.outcome == "interrupted":
        click.echo("ddplint: verify interrupted: the ranks were stopped", err=True)
    sys.exit(result.exit_code)


@click.command(
    name="verify-dumps", short_help="Read a hung job's flight-recorder dumps: where ranks split."
)
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@click.option(
    "--root",
    type=click.Path(exists=True, file_okay=False),
    default=None,
    help="Where the files the dumps name are looked for (default: the current folder): "
    "a recorded /job/src/train.py is found as ROOT/src/train.py or ROOT/train.py.",
)
@click.option(
    "--format",
    "--output-format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
)
def verify_dumps(folder: str, root: str | None, output_format: str) -> None:
    """Read the flight-recorder dumps of a job that already hung (one per rank in
    FOLDER: torch's pickle or JSON dumps, or a `ddplint verify` run folder), tell where
    the ranks first diverged, at which line, and which static finding explains it.
    Nothing in the dumps is run (pickles are read opcode by opcode); torch is not
    needed."""
    from ddplint.invocation import EXIT_ERROR, build_options
    from ddplint.settings import SettingsError
    from ddplint.verify.dump_diagnosis import diagnose
    from ddplint.verify.dump_report import render_json, render_text

    try:
        settings = rank_rule_settings(root or ".")
        diagnosis = diagnose(folder, settings, build_options(settings), root)
    except SettingsError as exc:
        click.echo(f"ddplint: error: {exc}", err=True)
        sys.exit(EXIT_ERROR)
    render = render_json if output_format == "json" else render_text
    click.echo(render(diagnosis), nl=False)
    if output_format == "json":  # the text report prints them itself
        for problem in diagnosis.dumps.problems:
            click.echo(f"ddplint: warning: {problem}", err=True)
    sys.exit(diagnosis.exit_code)
