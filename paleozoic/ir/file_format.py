"""The JSON files Paleozoic writes (plans, sensitivities, calibration records) carry a format
name and a version; a reader checks both the same way, so an old or foreign file is refused
with the same words whichever it is."""

from __future__ import annotations

from collections.abc import Mapping


def format_problem(data: object, source: str, name: str, version: int, what: str,
                   remedy: str = "") -> str | None:
    """Why `data` (parsed JSON read from `source`) is not a `what` of format `name` at
    `version`, or None when it is. `remedy` ends the version message (how to get a current
    file)."""
    if not isinstance(data, Mapping) or data.get("format") != name:
        return f"{source}: not a Paleozoic {what} (expected \"format\": \"{name}\")"
    if data.get("version") != version:
        return (f"{source}: {what} version {data.get('version')!r} is not supported (this "
                f"Paleozoic reads version {version}){remedy}")
    return None
