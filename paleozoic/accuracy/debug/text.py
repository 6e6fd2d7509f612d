"""The debug report as lines for an 80-column terminal: one line per block, the layers
(with their ONNX nodes) of the blocks that matter, or of every block with `all_layers`."""

from __future__ import annotations

import math

from paleozoic.accuracy.debug.analyse import BlockFigures, DebugReport, LayerFigures

WIDTH = 80


def _fit(text: str, width: int) -> str:
    """At most `width` characters; long names lose their middle (both ends identify)."""
    if len(text) <= width:
        return text
    keep = width - 1
    return text[:keep // 2] + "~" + text[len(text) - (keep - keep // 2):]


def _db(value: float | None) -> str:
    if value is None:
        return "-"
    return "inf" if value == math.inf else f"{value:.1f}"


def _cos(value: float | None) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.6f}"


def _block_line(b: BlockFigures) -> str:
    # A one-layer block (the per-layer plan) shows its layer: the name people look for.
    name = f"{b.name} {b.layers[0].name}" if len(b.layers) == 1 else b.name
    return (f"{_fit(name, 22):<22} {'yes' if b.fuse else 'no':>4} {b.mp:>3} "
            f"{b.precision:<5} {len(b.layers):>4} {_db(b.input_sqnr_db):>6} "
            f"{_db(b.sqnr_db):>7} {_db(b.drop_db):>6} {_cos(b.cosine):>9}")


def _layer_lines(f: LayerFigures) -> list[str]:
    # The figures sit in the block rows' columns (the layer count's stays blank).
    head = f"  {_fit(f.name, 20):<20} {_fit(f.kind, 9):<9} {f.precision:<5}".ljust(43)
    line = (f"{head}{_db(f.input_sqnr_db):>6} {_db(f.sqnr_db):>7} {_db(f.drop_db):>6} "
            f"{_cos(f.cosine):>9}")
    nodes = ", ".join(f.onnx_nodes) or "(no ONNX node: an output copy)"
    label = "ONNX nodes" if len(f.onnx_nodes) > 1 else "ONNX node"
    return [line, _fit(f"    {label}: {nodes}", WIDTH)]


def report_lines(report: DebugReport, all_layers: bool = False) -> list[str]:
    lines = [_fit(f"session {report.folder}, plan {report.strategy!r}", WIDTH),
             _fit(f"{report.batches} batch(es) of {report.data}", WIDTH),
             "SQNR (dB) and cosine vs onnxruntime fp32, pooled over the batches"]
    for name, o in report.outputs.items():
        lines.append(_fit(f"output {name}: SQNR {_db(o['sqnr_db'])} dB, cosine "
                          f"{_cos(o['cosine'])}", WIDTH))
    lines.append("")
    lines.append(f"{'block':<22} {'fuse':>4} {'mp':>3} {'prec':<5} {'lays':>4} {'in dB':>6} "
                 f"{'SQNR dB':>7} {'drop':>6} {'cosine':>9}")
    shown = {report.first_jump, report.first_below_budget}
    for b in report.blocks:
        lines.append(_block_line(b))
        if all_layers or b.name in shown:
            for f in b.layers:
                lines.extend(_layer_lines(f))
    lines.append("")
    if all_layers or shown - {None}:
        lines.append("layer rows: each layer compiled alone at its precision (the per-layer "
                     "run)"[:WIDTH])
    if report.first_jump is None:
        lines.append(f"no jump: no block's SQNR drops more than {report.jump_db:g} dB below "
                     f"its input's")
    else:
        b = next(b for b in report.blocks if b.name == report.first_jump)
        lines.append(_fit(f"first jump: block {b.name} (SQNR {_db(b.sqnr_db)} dB, drop "
                          f"{_db(b.drop_db)} dB > {report.jump_db:g} dB)", WIDTH))
    if report.first_jump_layer is not None:
        f = next(f for b in report.blocks for f in b.layers
                 if f.name == report.first_jump_layer)
        lines.append(_fit(f"first layer jump (per-layer run): {f.name} = ONNX "
                          f"{', '.join(f.onnx_nodes) or '-'}", WIDTH))
    if report.budget is not None:
        verdict = "meets" if report.meets_budget else "MISSES"
        lines.append(f"budget {report.budget.text()} on every output: {verdict}")
        if report.first_below_budget is not None:
            lines.append(_fit(f"first block below budget: {report.first_below_budget}",
                              WIDTH))
    return lines
