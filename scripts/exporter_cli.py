"""What every exporter script (export_families.py, export_paddle.py, export_sequence.py,
export_torchvision.py) shares and that needs neither torch nor paddle: the command line's
common options, the output folder, keeping or replacing an exported file, and the closing
table. Imported by its name: the scripts run as `python scripts/NAME.py`, with scripts/
first on the path."""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Iterable, Sequence
from pathlib import Path


def exporter_parser(description: str | None, default_out: str, models: Iterable[str],
                    default_models: str | None = None,
                    models_flag: str = "--models") -> argparse.ArgumentParser:
    """-o/--out and the comma-separated subset of `models` to export (all by default)."""
    models = list(models)
    parser = argparse.ArgumentParser(description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-o", "--out", default=default_out, help="output folder")
    parser.add_argument(models_flag, default=default_models or ",".join(models),
                        help=f"comma-separated subset of: {', '.join(models)}")
    return parser


def output_folder(out: str) -> Path:
    path = Path(out)
    path.mkdir(parents=True, exist_ok=True)
    return path


def keep_or_replace(tmp: Path, final: Path, force: bool) -> str:
    """Moves the fresh export `tmp` to `final`, unless `final` exists and not `force`
    (then drops `tmp`); returns the status to report."""
    if final.exists() and not force:
        tmp.unlink()
        return "OK (kept existing)"
    tmp.replace(final)
    return "OK"


def report_failure(label: str, err: Exception, tmp: Path, width: int = 200,
                   frames: int = 2) -> None:
    """Drops the partial export `tmp` and says `label` FAILED with the error's first line
    (at most `width` characters), its traceback's last `frames` frames on stderr."""
    tmp.unlink(missing_ok=True)
    print(f"{label}: FAILED {type(err).__name__}: "
          f"{str(err).splitlines()[0][:width] if str(err) else ''}", flush=True)
    traceback.print_exc(limit=frames, file=sys.stderr)


def print_table(columns: Sequence[str], right_aligned: Iterable[str],
                rows: Sequence[Sequence[str]], status_column: int) -> None:
    """The rows as a markdown table, then how many were exported and how many failed
    (a row fails when its status starts with FAILED)."""
    right = set(right_aligned)
    print()
    print("| " + " | ".join(columns) + " |")
    print("| " + " | ".join("---:" if c in right else "---" for c in columns) + " |")
    for row in rows:
        print("| " + " | ".join(c.replace("|", "/") for c in row) + " |")
    failed = sum(1 for r in rows if r[status_column].startswith("FAILED"))
    print(f"\n{len(rows) - failed} exported, {failed} failed")
