"""Shows a doctor report: a rich table on a terminal, plain text otherwise."""

from __future__ import annotations

from typing import TextIO

from ironhive.adapters.diagnostics.report import CATEGORIES, DoctorReport

_PLAIN_LABELS = {"pass": "OK", "warning": "WARN", "error": "ERROR"}
_RICH_LABELS = {"pass": "[green]✓[/green]", "warning": "[yellow]![/yellow]", "error": "[red]✗[/red]"}
_LABEL_WIDTH = 7


def summary_line(report: DoctorReport) -> str:
    """``Summary: 7 passed, 1 warning, 0 errors``."""
    counts = report.summary
    warnings = counts["warning"]
    errors = counts["error"]
    return (
        f"Summary: {counts['pass']} passed, {warnings} warning{'' if warnings == 1 else 's'}, "
        f"{errors} error{'' if errors == 1 else 's'}"
    )


def render_plain(report: DoctorReport) -> str:
    """The report as plain text: fixes first, then each category's checks with their hints, then the summary."""
    lines: list[str] = []
    if report.fixes:
        lines.append("Fixes applied")
        lines.extend(f"  - {fix}" for fix in report.fixes)
        lines.append("")
    indent = " " * (2 + _LABEL_WIDTH)
    for category in _categories(report):
        lines.append(category)
        for check in report.checks:
            if check.category != category:
                continue
            label = _PLAIN_LABELS[check.status].ljust(_LABEL_WIDTH)
            lines.append(f"  {label}{check.name}: {check.message}")
            if check.hint:
                lines.append(f"{indent}Hint: {check.hint}")
        lines.append("")
    lines.append(summary_line(report))
    return "\n".join(lines) + "\n"


def render_rich(report: DoctorReport, stream: TextIO, *, color: bool = True) -> None:
    """Print the report as a rich table on ``stream`` (a terminal); without ``color`` (``NO_COLOR``, ``--plain``) the
    same layout with no escape sequence."""
    from rich import box
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(file=stream, highlight=False, emoji=False, color_system="auto" if color else None)
    if report.fixes:
        console.print("[bold]Fixes applied[/bold]")
        for fix in report.fixes:
            console.print(f"  • {escape(fix)}")
        console.print()
    table = Table(box=box.SIMPLE_HEAD, show_header=True, header_style="bold", expand=False)
    table.add_column("", width=1)
    table.add_column("Check", no_wrap=True)
    table.add_column("Result", overflow="fold")
    for category in _categories(report):
        table.add_row("", f"[bold cyan]{category}[/bold cyan]", "")
        for check in report.checks:
            if check.category != category:
                continue
            result = escape(check.message)
            if check.hint:
                result += f"\n[dim]→ {escape(check.hint)}[/dim]"
            table.add_row(_RICH_LABELS[check.status], escape(check.name), result)
    console.print(table)
    style = "red" if report.failed else "yellow" if report.summary["warning"] else "green"
    console.print(f"[{style}]{escape(summary_line(report))}[/{style}]")


def _categories(report: DoctorReport) -> list[str]:
    present = {check.category for check in report.checks}
    known = [category for category in CATEGORIES if category in present]
    return known + sorted(present - set(known))
