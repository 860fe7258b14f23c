#!/usr/bin/env python3
"""Where a server's resident memory is: its binary's pages in memory, by crate.

    bench/scripts/resident-code.py [--scenario hello] [--load 3] SERVER...

SERVER is a server's own binary (target/release/strata-bench-strata, -axum, -hyper). Each is
started on its scenario, loaded for --load seconds by `strata-bench load` (0: left idle), and
then read: /proc/<pid>/status (RSS, anonymous and file-backed), and /proc/<pid>/pagemap for
which pages of the binary's code and read-only data are in memory (root is needed to read it).
A resident code page is attributed to the crates of the symbols in it (`nm`), in proportion to
their bytes; a symbol `<T as Trait>::f` or `core::ptr::drop_in_place<T>` counts for its first
path segment, so generic code instantiated for a crate's types often shows under `core` or
`alloc`. The kernel maps file pages around a fault (fault-around, 64 KiB), so the count of
64 KiB windows touched says more than the page count about how spread the code that ran is.
"""

import argparse
import bisect
import collections
import os
import re
import struct
import subprocess
import sys

PAGE = 4096
WINDOW = 65536


def start(binary, scenario):
    server = subprocess.Popen(
        [binary, scenario], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    line = server.stdout.readline().split()
    if len(line) != 2 or line[0] != "listening":
        server.kill()
        sys.exit(f"{binary} did not start: {line}")
    return server, line[1]


def status(pid):
    fields = {}
    for line in open(f"/proc/{pid}/status"):
        name, _, value = line.partition(":")
        if name in ("VmHWM", "VmRSS", "RssAnon", "RssFile"):
            fields[name] = int(value.split()[0])
    return fields


def resident_pages(pid, binary):
    """File offsets of the binary's resident pages, with the mapping's permissions."""
    name = os.path.realpath(binary)
    present = {}
    with open(f"/proc/{pid}/pagemap", "rb") as pagemap:
        for line in open(f"/proc/{pid}/maps"):
            parts = line.split()
            if len(parts) < 6 or os.path.realpath(parts[5]) != name:
                continue
            low, high = (int(x, 16) for x in parts[0].split("-"))
            offset = int(parts[2], 16)
            for address in range(low, high, PAGE):
                pagemap.seek(address // PAGE * 8)
                (entry,) = struct.unpack("<Q", pagemap.read(8))
                if entry >> 63 & 1:
                    present[offset + address - low] = parts[1]
    return present


def symbols(binary):
    """(file offset, size, demangled name) of the binary's defined symbols, sorted."""
    loads = []
    for line in subprocess.run(
        ["readelf", "-lW", binary], capture_output=True, text=True, check=True
    ).stdout.splitlines():
        fields = line.split()
        if fields and fields[0] == "LOAD":
            loads.append((int(fields[1], 16), int(fields[2], 16), int(fields[4], 16)))
    found = []
    for line in subprocess.run(
        ["nm", "-C", "-S", "--defined-only", binary], capture_output=True, text=True, check=True
    ).stdout.splitlines():
        # "address size type name"; symbols without a size are left out.
        fields = re.match(r"([0-9a-f]+) ([0-9a-f]+) (\w) (.*)", line)
        if fields is None:
            continue
        address, size = int(fields[1], 16), int(fields[2], 16)
        for offset, vaddr, filesz in loads:
            if vaddr <= address < vaddr + filesz:
                found.append((address - vaddr + offset, size, fields[4]))
                break
    found.sort()
    return found


def crate_of(name):
    name = re.sub(r"^[<&*\s]*(?:dyn |impl |mut |const )?", "", name)
    match = re.match(r"[A-Za-z_][A-Za-z0-9_]*", name)
    return match.group(0) if match else "?"


def by_crate(present, syms):
    starts = [s[0] for s in syms]
    totals = collections.Counter()
    for page, perms in present.items():
        if "x" not in perms:
            continue
        weights = collections.Counter()
        i = max(bisect.bisect_right(starts, page) - 1, 0)
        while i < len(syms) and syms[i][0] < page + PAGE:
            offset, size, name = syms[i]
            overlap = min(offset + size, page + PAGE) - max(offset, page)
            if overlap > 0:
                weights[crate_of(name)] += overlap
            i += 1
        if not weights:
            totals["(no symbol)"] += PAGE
        for crate, weight in weights.items():
            totals[crate] += PAGE * weight / sum(weights.values())
    return totals


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("servers", nargs="+")
    parser.add_argument("--scenario", default="hello")
    parser.add_argument("--load", type=float, default=3, help="seconds of load (0: idle)")
    parser.add_argument("--bench", default="target/release/strata-bench")
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    for binary in args.servers:
        server, address = start(binary, args.scenario)
        try:
            if args.load > 0:
                subprocess.run(
                    [args.bench, "load", address, args.scenario, "--duration", f"{args.load}s"],
                    check=True,
                    stdout=subprocess.DEVNULL,
                )
            memory = status(server.pid)
            present = resident_pages(server.pid, binary)
        finally:
            server.stdin.close()
            server.wait()
        code = sorted(p for p, perms in present.items() if "x" in perms)
        data = sorted(p for p, perms in present.items() if perms.startswith("r--"))
        print(f"== {binary} ({args.scenario}, {'idle' if args.load <= 0 else f'after {args.load:g} s of load'})")
        print(
            "RSS {VmRSS} kB (peak {VmHWM}): anonymous {RssAnon} kB, file-backed {RssFile} kB".format(
                **memory
            )
        )
        print(
            f"its code: {len(code) * PAGE // 1024} KiB resident in "
            f"{len({p // WINDOW for p in code})} windows of 64 KiB; read-only data: "
            f"{len(data) * PAGE // 1024} KiB in {len({p // WINDOW for p in data})} windows"
        )
        for crate, size in by_crate(present, symbols(binary)).most_common(args.top):
            print(f"{size / 1024:8.0f} KiB  {crate}")


if __name__ == "__main__":
    main()
