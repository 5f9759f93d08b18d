#!/usr/bin/env python3
"""Fails when a source file includes a layer it may not depend on.

The layers, lowest first, and what each may include besides itself. A folder
not named here belongs to its closest named parent. The CMake targets follow
the same graph (one target per folder); this check keeps the includes honest
where a target's link line alone would not (a header-only include needs no
link). Usage: check_layers.py <source root>
"""
import pathlib
import re
import sys

BASE = "common/base"
PROTO = "proto"
NET = "common/net"
METRICS = "common/metrics"
REDIS = "common/redis"
TABLE = "common/table"
AUTH = "common/auth"
TRANSPORT = "common/transport"
TCP = "common/transport/tcp"
VERBS = "common/transport/verbs"
CLI = "common/cli"
COMMON = [BASE, PROTO, NET, METRICS, REDIS, TABLE, AUTH, TRANSPORT, TCP, VERBS, CLI]

ALLOWED = {
    BASE: [],
    PROTO: [BASE],
    NET: [BASE],
    # Counters the transports update (one atomic add); the endpoint is evhttp.
    METRICS: [BASE, NET],
    # A shard's cluster slots (redis/cluster_slots.h) are proto's SlotRanges.
    REDIS: [BASE, NET, PROTO],
    TABLE: [BASE, PROTO],
    AUTH: [BASE, PROTO],
    # The control session (transport/control_session.h) checks AUTH proofs.
    TRANSPORT: [BASE, PROTO, TABLE, AUTH, METRICS],
    TCP: [BASE, PROTO, TABLE, NET, AUTH, TRANSPORT, METRICS],
    VERBS: [BASE, PROTO, TABLE, NET, AUTH, TRANSPORT, METRICS],
    # --version names the wire formats and RDB versions (common/cli/version.cc);
    # --metrics is parsed as the endpoint reads it (common/cli/metrics_flag.cc),
    # --huge-pages as table memory takes it (common/cli/huge_pages_flag.cc).
    CLI: [BASE, NET, PROTO, METRICS, TABLE],
    "server": COMMON,
    "client": COMMON,
    "bench": COMMON + ["server", "client"],
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(path):
    best = None
    for layer in ALLOWED:
        if path == layer or path.startswith(layer + "/"):
            if best is None or len(layer) > len(best):
                best = layer
    return best


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    files = sorted({str(f.relative_to(root)) for top in ("common", "proto", "server", "client", "bench")
                    for pattern in ("*.h", "*.cc") for f in (root / top).rglob(pattern)})
    bad = []
    for name in files:
        layer = layer_of(name)
        if layer is None:
            continue  # tests/ may include every layer
        text = (root / name).read_text(errors="replace")
        for included in INCLUDE.findall(text):
            target = layer_of(included)
            if target is None and not included.startswith("tests/"):
                continue  # a header beside the file, not a layer
            if target == layer or target in ALLOWED[layer]:
                continue
            bad.append(f"{name}: includes {included}, but {layer} may include only "
                       f"{', '.join(ALLOWED[layer]) or 'itself'}")
    for line in bad:
        print(line)
    if bad:
        print(f"check_layers: {len(bad)} include(s) cross the layers upward "
              "(see the table in tests/layering/check_layers.py)")
        return 1
    print(f"check_layers: {len(files)} files, every include within its layer's reach")
    return 0


if __name__ == "__main__":
    sys.exit(main())
