"""``check --show-settings`` and ``check --show-files``: what a run would use, printed
instead of linting (ruff's options of the same names)."""

from __future__ import annotations

from ddplint.code.torch_floor import TORCH_VERSION_SOURCE
from ddplint.discover import Discovery
from ddplint.report.printable import printable
from ddplint.rules import all_rules
from ddplint.settings import LintOptions, RuleSelection, Settings


def _codes(codes: tuple[str, ...] | None, default: str = "(none)") -> str:
    return ", ".join(codes) if codes else default


def _layer(layer: RuleSelection) -> str:
    """``--select DDP201; --ignore DDP2``: the command line's rule selection."""
    parts = [
        f"--{flag} {', '.join(codes)}"
        for flag, codes in (
            ("select", layer.select),
            ("extend-select", layer.extend_select),
            ("ignore", layer.ignore),
        )
        if codes
    ]
    return "; ".join(parts) + " (over the file's)" if parts else "(none)"


def settings_text(settings: Settings, options: LintOptions) -> str:
    """The resolved settings: where they came from, each value, the rules selected."""
    config = str(settings.config_file) if settings.config_file else "none (built-in defaults)"
    floor = options.torch_version or "unknown"
    source = options.fact(TORCH_VERSION_SOURCE)
    per_file = "; ".join(
        f"{pattern} = {', '.join(codes)}" for pattern, codes in settings.per_file_ignores
    )
    rows = [
        ("Settings file", config),
        ("Project root", str(settings.project_root)),
        ("select", _codes(settings.select, "(default set)")),
        ("extend-select", _codes(settings.extend_select)),
        ("ignore", _codes(settings.ignore)),
        ("command line", _layer(settings.command_line)),
        ("per-file-ignores", per_file or "(none)"),
        ("exclude", _codes(settings.exclude)),
        ("extend-exclude", _codes(settings.extend_exclude)),
        ("force-exclude", str(settings.force_exclude).lower()),
        ("preview", str(settings.preview).lower()),
        ("torch-version", settings.torch_version or "(not set)"),
        ("torch floor used", f"{floor} ({source})" if source else floor),
        ("max-file-size", f"{settings.max_file_size} bytes"),
    ]
    width = max(len(name) for name, _ in rows) + 2
    lines = [f"{name + ':':<{width}}{printable(value)}" for name, value in rows]
    catalogue = all_rules()
    lines.append(f"Rules selected ({len(options.selected)}):")
    lines.extend(f"  {code}  {catalogue[code].name}" for code in options.selected)
    return "\n".join(lines) + "\n"


def files_text(found: Discovery) -> str:
    """The files a run would lint, one per line, in lint order."""
    return "".join(printable(target.display) + "\n" for target in found.targets)
