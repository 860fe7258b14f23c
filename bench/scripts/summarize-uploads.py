#!/usr/bin/env python3
"""The median of several `strata-bench uploads --json` runs, with their spread, as
BENCHMARKS.md's uploads table.

    bench/scripts/summarize-uploads.py uploads1.json uploads2.json ...

MiB/s, CPU per MiB and peak RSS cells are the median of the runs' own values (each run's
MiB/s is already the median of its rounds); "÷ axum" is the median of the runs' ratios (each
the median of its rounds' ratios) with the lowest and highest run, so a single favourable run
cannot carry a figure. The goal line compares each size and mode with issue 51's goal:
Strata at least 1.0 × axum's MiB/s, peak RSS within 16 MiB of axum's; it is judged on the
median of the runs' ratios (the stricter reading), and also gives the ratio of the median
MiB/s.
"""

import json
import statistics
import sys


def main(paths):
    runs = [json.load(open(path)) for path in paths]
    cases = {}
    for run in runs:
        for case in run["cases"]:
            key = (case["file_bytes"] // (1024 * 1024), case["mode"])
            for server in case["servers"]:
                cases.setdefault(key, {}).setdefault(server["server"], []).append(server)
    print(f"{len(runs)} runs\n")
    print("| file | mode | server | MiB/s | ÷ axum, median of runs (lowest–highest) "
          "| CPU ms per MiB | peak RSS |")
    print("|---:|---|---|---:|---:|---:|---:|")
    goals = []
    for (mib, mode), servers in sorted(cases.items()):
        for name, values in servers.items():
            speed = statistics.median(v["mib_per_second"]["median"] for v in values)
            cpu = statistics.median(v["cpu_ms_per_mib"]["median"] for v in values)
            rss = statistics.median(v["peak_rss_kib"] for v in values) / 1024
            ratio = ""
            if name != "axum" and all(v.get("over_axum") for v in values):
                ratios = [v["over_axum"]["median"] for v in values]
                ratio = (f"{statistics.median(ratios):.2f} "
                         f"({min(ratios):.2f}–{max(ratios):.2f})")
            print(f"| {mib} MiB | {mode} | {name} | {speed:,.0f} | {ratio} | {cpu:.2f} "
                  f"| {rss:.1f} MiB |")
        if "strata" in servers and "axum" in servers:
            ratios = [v["over_axum"]["median"] for v in servers["strata"]]
            rss = (statistics.median(v["peak_rss_kib"] for v in servers["strata"])
                   - statistics.median(v["peak_rss_kib"] for v in servers["axum"])) / 1024
            ratio = statistics.median(ratios)
            of_medians = (statistics.median(v["mib_per_second"]["median"]
                                            for v in servers["strata"])
                          / statistics.median(v["mib_per_second"]["median"]
                                              for v in servers["axum"]))
            held = "holds" if ratio >= 1.0 and rss <= 16 else "does NOT hold"
            goals.append(f"- {mib} MiB {mode}: {ratio:.3f} × axum's MiB/s by the rounds' ratios "
                         f"({min(ratios):.2f}–{max(ratios):.2f}), {of_medians:.3f} by the "
                         f"median MiB/s; peak RSS {rss:+.1f} MiB: {held}")
    print()
    print("\n".join(goals))


if __name__ == "__main__":
    main(sys.argv[1:])
