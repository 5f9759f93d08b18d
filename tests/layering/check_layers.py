#!/usr/bin/env python3
"""Fails when a source file includes a layer it may not depend on.

The layers, lowest first, and what each may include besides itself. A folder
not named here belongs to its closest named parent; a layer may also be a
file name without its extension (client/client_config: its .h and .cc). The
common/ and proto/ CMake targets follow the same graph (one target per
folder); the client's sub-folders are one target (rrs_client), so for them
this check is the only guard. It keeps the includes honest where a target's
link line alone would not (a header-only include needs no link).
Usage: check_layers.py <source root>
"""
import pathlib
import re
import sys

BASE = "common/base"
PROTO = "proto"
NET = "common/net"
TLS = "common/tls"
METRICS = "common/metrics"
REDIS = "common/redis"
TABLE = "common/table"
AUTH = "common/auth"
TRANSPORT = "common/transport"
TCP = "common/transport/tcp"
VERBS = "common/transport/verbs"
CLI = "common/cli"
COMMON = [BASE, PROTO, NET, TLS, METRICS, REDIS, TABLE, AUTH, TRANSPORT, TCP, VERBS, CLI]

# rdma-client, lowest first. Its options and its counters are what every
# part reads or bumps (the fetcher counts bytes, sync/ counts the loaded
# records, follow/ sets its lag), so they are the bottom, not the top; main.cc
# (client/ itself) is the top. fetch/ reads the table; sync/ drives one full
# sync into a LoadSink; restore/, replica/ (the two load paths) and verify/
# build on sync/ and never on each other; follow/ syncs, then tails the log
# into either load path's target; cluster/ runs restore and follow per shard.
CLIENT_CONFIG = "client/client_config"
CLIENT_FLAGS = "client/client_flags"  # the options' table; config checks across them
CLIENT_METRICS = "client/client_metrics"
FETCH = "client/fetch"
SYNC = "client/sync"
RESTORE = "client/restore"
REPLICA = "client/replica"
VERIFY = "client/verify"
FOLLOW = "client/follow"
CLUSTER = "client/cluster"
CLIENT_BASE = COMMON + [CLIENT_CONFIG, CLIENT_FLAGS, CLIENT_METRICS]

ALLOWED = {
    BASE: [],
    PROTO: [BASE],
    NET: [BASE],
    TLS: [BASE, NET],
    # Counters the transports update (one atomic add); the endpoint is evhttp.
    METRICS: [BASE, NET],
    # A shard's cluster slots (redis/cluster_slots.h) are proto's SlotRanges.
    REDIS: [BASE, NET, TLS, PROTO],
    TABLE: [BASE, PROTO],
    AUTH: [BASE, PROTO],
    # The control session (transport/control_session.h) checks AUTH proofs.
    TRANSPORT: [BASE, PROTO, TABLE, AUTH, METRICS],
    TCP: [BASE, PROTO, TABLE, NET, TLS, AUTH, TRANSPORT, METRICS],
    VERBS: [BASE, PROTO, TABLE, NET, AUTH, TRANSPORT, METRICS],
    # --version names the wire formats and RDB versions (common/cli/version.cc);
    # --metrics is parsed as the endpoint reads it, --huge-pages as table
    # memory takes it (common/cli/shared_flags.cc).
    CLI: [BASE, NET, TLS, PROTO, METRICS, TABLE],
    "server": COMMON,
    CLIENT_CONFIG: COMMON + [CLIENT_FLAGS],
    CLIENT_FLAGS: COMMON + [CLIENT_CONFIG],
    CLIENT_METRICS: COMMON,
    FETCH: CLIENT_BASE,
    SYNC: CLIENT_BASE + [FETCH],
    RESTORE: CLIENT_BASE + [FETCH, SYNC],
    REPLICA: CLIENT_BASE + [FETCH, SYNC],
    VERIFY: CLIENT_BASE + [FETCH, SYNC],
    FOLLOW: CLIENT_BASE + [FETCH, SYNC, RESTORE, REPLICA],
    CLUSTER: CLIENT_BASE + [FETCH, SYNC, RESTORE, REPLICA, FOLLOW],
    "client": CLIENT_BASE + [FETCH, SYNC, RESTORE, REPLICA, VERIFY, FOLLOW, CLUSTER],
}
ALLOWED["bench"] = COMMON + ["server"] + [layer for layer in ALLOWED if layer.startswith("client")]


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(path):
    best = None
    for layer in ALLOWED:
        if path == layer or path.startswith(layer + "/") or re.fullmatch(
                re.escape(layer) + r"\.(h|cc)", path):
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
