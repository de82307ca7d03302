"""`tputui diff A B [--run-a R] [--run-b R] [--host H] [--format text|json|csv] [--fail-if-slower PCT]`.

Exit 0; 1 when --fail-if-slower trips (B's mean step time, or its device time without steps, more
than PCT percent worse than A's); 2 on bad input.
"""
from __future__ import annotations

import argparse
import json
import sys

from tputui.text_output import write_text

EXIT_SLOWER = 1
EXAMPLES = """A and B: logdirs, run folders or .xplane.pb files (local or gs://); a run name as B picks that
run of A's logdir; the same logdir twice compares its previous run with its newest.

examples:
  tputui diff ./logs ./logs                              previous run vs newest
  tputui diff ./logs 2026_01_02_00_00_00 --run-a 2026_01_01_00_00_00
  tputui diff base/ new/ --format json > diff.json
  tputui diff base/ new/ --fail-if-slower 5               CI: exit 1 when B is over 5% slower
  tputui diff base/ new/ --format csv --table hlo_ops"""
TABLES = ("ops", "hlo_ops", "framework_ops", "kpis", "step_time", "step_breakdown", "memory")
TEXT_OPS = 15  # op rows per table in the text report


def diff_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tputui diff", description="Compare two runs: step time, KPIs, op deltas.",
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXAMPLES)
    p.add_argument("a", help="the baseline (A)")
    p.add_argument("b", help="the run compared with it (B)")
    p.add_argument("--run-a", help="run of A (default: newest)")
    p.add_argument("--run-b", help="run of B (default: newest)")
    p.add_argument("--host", help="compare one host (default: all hosts combined)")
    p.add_argument("--format", default="text", choices=("text", "json", "csv"), help="text (default), json, csv")
    p.add_argument("--table", choices=TABLES, help="CSV: which table (default: ops, HLO and framework op deltas)")
    p.add_argument("--fail-if-slower", type=float, metavar="PCT",
                   help="exit 1 when B is more than PCT percent slower than A (mean step time, else device time)")
    p.add_argument("-o", "--output", help="file to write (default: stdout)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the decode cache")
    return p


def render_text(d) -> str:
    from tputui.text_table import text_table

    j = d.to_json()
    out = [f"A: {d.a.label}  ({', '.join(d.a.hosts)})", f"B: {d.b.label}  ({', '.join(d.b.hosts)})", ""]
    st = j["step_time"]
    if st["a"] and st["b"]:
        out.append("Step time (ms)")
        out.append(text_table(d.step_time_table()))
        out.append("Step time breakdown (mean ms per step)")
        out.append(text_table(d.step_breakdown))
    else:
        out.append("Step time: no steps in " + ("A and B" if not st["a"] and not st["b"] else "A" if not st["a"] else "B")
                   + "\n")
    out.append("Overview KPIs")
    out.append(text_table(d.kpis.drop("key")))
    for key in ("a", "b"):
        if d.bottleneck.get(f"{key}_statement"):
            out.append(f"Bottleneck {key.upper()}: {d.bottleneck[key + '_statement']}")
    out.append("")
    for title, ops in (("HLO ops", d.hlo_ops), ("Framework ops", d.framework_ops)):
        if ops.height:
            out.append(f"{title}: {ops.height:,} ({_only_counts(ops)}), largest time changes first")
            out.append(text_table(ops.drop("program_a", "program_b", strict=False), max_rows=TEXT_OPS))
    if d.memory.height:
        out.append("Memory")
        out.append(text_table(d.memory))
    for side in (d.a, d.b):
        for note in side.notes:
            out.append(f"note: {side.label}: {note}")
    g = d.gate
    if g["delta_pct"] is not None:
        out.append(f"{g['measure']}: A {g['a']:,.3f} {g['unit']} · B {g['b']:,.3f} {g['unit']} · "
                   f"{g['delta_pct']:+.2f}%")
    return "\n".join(out).rstrip() + "\n"


def _only_counts(ops) -> str:
    a = int((ops["only_in"] == "A").sum())
    b = int((ops["only_in"] == "B").sum())
    return f"{a} only in A, {b} only in B"


def render(d, fmt: str, table: str | None) -> str:
    if fmt == "json":
        from tputui.export import _clean

        return json.dumps(_clean(d.to_json()), indent=1, default=str) + "\n"
    if fmt == "csv":
        from tputui.export import csv_text

        return csv_text(d.tables()[table or "ops"])
    return render_text(d)


def main(argv: list[str]) -> int:
    from tputui.compare import diff_runs, resolve_pair

    a = diff_parser().parse_args(argv)
    if a.table and a.format != "csv":
        from tputui.errors import UserError

        raise UserError("--table goes with --format csv")
    ra, la, rb, lb = resolve_pair(a.a, a.b, a.run_a, a.run_b, use_cache=not a.no_cache)
    d = diff_runs(ra, rb, a.host, la, lb)
    text = render(d, a.format, a.table)
    write_text(text, a.output)
    if a.fail_if_slower is not None and d.slower_than(a.fail_if_slower):
        g = d.gate
        print(f"tputui: B is {g['delta_pct']:.2f}% slower than A ({g['measure']}: {g['a']:,.3f} -> {g['b']:,.3f} "
              f"{g['unit']}), over the {a.fail_if_slower:g}% limit", file=sys.stderr)
        return EXIT_SLOWER
    return 0
