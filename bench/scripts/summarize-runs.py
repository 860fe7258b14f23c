#!/usr/bin/env python3
"""The median of several full runs, with their spread, as BENCHMARKS.md's tables.

    bench/scripts/summarize-runs.py run1.json run2.json run3.json ...

Each file is one run's `--json` output. Throughput, CPU and memory cells are the median of
the runs' own values (each run's req/s is already the median of its rounds); a ratio is the
median of the runs' ratios, with the lowest and highest run in parentheses, so a single
favourable run cannot carry a figure. A CPU ratio is the reference's CPU per request over
Strata's (above 1: Strata spends less).
"""

import json
import statistics
import sys

NAMES = {
    "hyper": "hyper",
    "axum": "axum",
    "strata": "Strata",
    "express-zod-api": "express-zod-api",
    "quick-start": "quick start",
}


def load(paths):
    runs = []
    for path in paths:
        with open(path) as file:
            data = json.load(file)
        scenarios = {}
        for scenario in data["scenarios"]:
            scenarios[scenario["scenario"]] = {s["server"]: s for s in scenario["servers"]}
        runs.append(scenarios)
    return runs


def binary_warnings(paths):
    """Lines saying which runs served hyper, axum and Strata from the harness's own binary
    (`own_binaries` false: a source was newer than their binaries). That binary holds all three
    servers, so every peak RSS is about 4 MiB higher than from their own binaries: such runs do
    not compare with the others on memory."""
    shared = []
    for path in paths:
        with open(path) as file:
            if not json.load(file).get("own_binaries", True):
                shared.append(path)
    if not shared:
        return []
    mixed = " (mixed with runs from the servers' own binaries)" if len(shared) < len(paths) else ""
    return [
        f"WARNING: {len(shared)} of {len(paths)} runs served the servers from the harness's own "
        f"binary{mixed}; peak RSS does not compare with runs from their own binaries: "
        + ", ".join(shared),
        "",
    ]


def spread(values, digits=2):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    return (
        f"{statistics.median(values):.{digits}f} "
        f"({min(values):.{digits}f}–{max(values):.{digits}f})"
    )


def median(values, fmt="{:,.0f}"):
    values = [v for v in values if v is not None]
    return fmt.format(statistics.median(values)) if values else "-"


def field(run, scenario, server, key):
    entry = run.get(scenario, {}).get(server)
    return None if entry is None else entry.get(key)


def ratio(run, scenario, key, numerator, denominator):
    a, b = field(run, scenario, numerator, key), field(run, scenario, denominator, key)
    return None if a is None or b is None or b == 0 else a / b


def across(run, key, numerator, denominator):
    """Strata's `key` in scenario `numerator` over the same in scenario `denominator`."""
    a, b = field(run, numerator, "strata", key), field(run, denominator, "strata", key)
    return None if a is None or b is None or b == 0 else a / b


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    runs = load(sys.argv[1:])
    scenarios = list(runs[0])
    print(f"{len(runs)} runs\n")
    for line in binary_warnings(sys.argv[1:]):
        print(line)
    print(
        "| scenario | hyper req/s | axum req/s | Strata req/s | express-zod-api req/s "
        "| Strata ÷ axum | Strata ÷ hyper | Strata ÷ express-zod-api "
        "| Strata ÷ axum, CPU/req | Strata ÷ hyper, CPU/req |"
    )
    print("|---|" + "---:|" * 9)
    for scenario in scenarios:
        cells = [
            median([field(r, scenario, s, "rps_median") for r in runs])
            for s in ("hyper", "axum", "strata", "express-zod-api")
        ]
        cells += [
            spread([ratio(r, scenario, "rps_median", "strata", ref) for r in runs])
            for ref in ("axum", "hyper", "express-zod-api")
        ]
        cells += [
            spread([ratio(r, scenario, "cpu_us_per_request", ref, "strata") for r in runs])
            for ref in ("axum", "hyper")
        ]
        print(f"| {scenario} | " + " | ".join(cells) + " |")
    print()
    servers = ("hyper", "axum", "strata", "express-zod-api", "quick-start")
    print(
        "| scenario | "
        + " | ".join(f"{NAMES[s]} CPU µs/req" for s in servers)
        + " | "
        + " | ".join(f"{NAMES[s]} RSS MiB" for s in servers)
        + " | Strata − axum RSS, MiB |"
    )
    print("|---|" + "---:|" * (2 * len(servers) + 1))
    for scenario in scenarios:
        cpu = [
            median([field(r, scenario, s, "cpu_us_per_request") for r in runs], "{:.1f}")
            for s in servers
        ]
        rss = [
            median(
                [
                    None if (v := field(r, scenario, s, "peak_rss_kib")) is None else v / 1024
                    for r in runs
                ],
                "{:.1f}",
            )
            for s in servers
        ]
        difference = []
        for r in runs:
            a, b = field(r, scenario, "strata", "peak_rss_kib"), field(r, scenario, "axum", "peak_rss_kib")
            difference.append(None if a is None or b is None else (a - b) / 1024)
        print(f"| {scenario} | " + " | ".join(cpu + rss) + f" | {spread(difference)} |")
    print()
    for scenario in scenarios:
        quick = [ratio(r, scenario, "rps_median", "quick-start", "strata") for r in runs]
        if any(v is not None for v in quick):
            print(f"quick start ÷ Strata by req/s, {scenario}: {spread(quick)}")
    hyper_ezapi = [ratio(r, "hello", "rps_median", "hyper", "express-zod-api") for r in runs]
    print(f"hyper ÷ express-zod-api by req/s, hello: {spread(hyper_ezapi)}")
    # routes-10k against hello: req/s over req/s, CPU per request the other way round.
    routes = [across(r, "rps_median", "routes-10k", "hello") for r in runs]
    print(f"Strata routes-10k ÷ hello by req/s: {spread(routes)}")
    routes_cpu = [across(r, "cpu_us_per_request", "hello", "routes-10k") for r in runs]
    print(f"Strata routes-10k ÷ hello by CPU/req: {spread(routes_cpu)}")


if __name__ == "__main__":
    main()
