"""sync_bench's report: the CSV of every replica of every sync, a Markdown
summary with the targets the harness exists to read off, and PNG plots.

Rows are (system, arrival, replicas at once). arrival: `first` (the replica
waits for a snapshot of the master: every native replica, and a sidecar's
first replica of an epoch, whose figure is the on-demand snapshot + its
load), `later` (a sidecar's replicas arriving while the epoch's table is
held: load only), `prepared` (the floor). Medians, minima and maxima are over
runs; a run's figure for N replicas is the time from the request until all N
are loaded (the slowest replica), since that is what the operator waits for.
Per-replica figures are in the CSV.
"""
import os
import platform
import shlex
import socket
import statistics
import subprocess

from benchlib import RedisServer, key_value_table, pyplot, servers_tag, write_csv

SYSTEM_ORDER = ["native-disk", "native-diskless", "sidecar-tcp", "sidecar-verbs",
                "sidecar-tcp-replica", "sidecar-verbs-replica", "floor"]
SIDECARS = [s for s in SYSTEM_ORDER if s.startswith("sidecar")]
SYSTEM_WHAT = {
    "native-disk": "native full sync, RDB written to disk then sent (repl-diskless-sync no)",
    "native-diskless": "native diskless full sync (repl-diskless-sync yes, delay 5, "
                       "max-replicas N: one fork for all N; replicas repl-diskless-load swapdb)",
    "sidecar-tcp": "rdma-server on demand (--snapshot-delay 0; one epoch per run: its first "
                   "replica's request makes the snapshot, later replicas find the table held) "
                   "+ one rdma-client per replica over TCP, --mode restore (pipelined RESTORE)",
    "sidecar-verbs": "the same over RDMA READ",
    "sidecar-tcp-replica": "as sidecar-tcp, but rdma-client --mode replica: the replica "
                           "(repl-diskless-load swapdb) is made a replica of the client, which "
                           "streams it an RDB written from the table as it reads it",
    "sidecar-verbs-replica": "the same over RDMA READ",
    "floor": "a replica (swapdb) loading the master's prepared RDB from rdb_feeder.py, a fake "
             "master that only sends the file: the ingest floor",
}
CSV_FIELDS = ["dataset", "system", "arrival", "replicas", "run", "replica", "keys", "value_size",
              "wall_s", "load_s", "snapshot_s", "epoch",
              "MBps", "keys_per_s", "transfer_s", "client_s", "client_cpu_s", "rdb_bytes",
              "replica_cpu_s",
              "master_cpu_s", "master_cpu_sync_s", "master_peak_rss_mb", "master_cow_mb",
              "sidecar_cpu_s", "build_s", "busy_before", "others_cores"]


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def server_lines(a):
    """What ran, for the printed header: `server: NAME (Engine VERSION) BINARY`,
    and the target server's line when it is another."""
    def line(role, s):
        return f"{role}: {s.describe()} {s.binary}"
    target = getattr(a, "target_server", None)
    if target is None or target == a.server:
        return [line("server", a.server)]
    return [line("master server", a.server), line("target server", target)]


def machine(repo_dir, servers=None):
    """The machine's description as (key, value) rows. servers: (role, ServerBinary)
    pairs, each a row with its name and `--version`; without, the redis-server
    on PATH (build_bench)."""
    def first(path, key):
        try:
            with open(path) as f:
                for ln in f:
                    if ln.startswith(key):
                        return ln.split(":", 1)[1].strip()
        except OSError:
            pass
        return "?"

    def cmd(*argv):
        try:
            return subprocess.run(argv, capture_output=True, text=True).stdout.strip()
        except OSError:
            return "?"
    mem_kb = first("/proc/meminfo", "MemTotal").split()[0]
    sha = cmd("git", "-C", repo_dir, "rev-parse", "--short", "HEAD") or "?"
    dirty = cmd("git", "-C", repo_dir, "status", "--porcelain")
    virt = cmd("systemd-detect-virt") or "?"
    with open("/proc/cmdline") as f:
        in_vm = "virtme_hostname" in f.read()
    return [
        ("host", socket.gethostname() + (" (the Soft-RoCE TCG VM: emulated CPU)" if in_vm else "")),
        ("virtualization", virt),
        ("nproc", f"{os.cpu_count()} (usable: {len(os.sched_getaffinity(0))})"),
        ("cpu", first("/proc/cpuinfo", "model name")),
        ("memory", f"{int(mem_kb) / 1024 / 1024:.1f} GiB" if mem_kb.isdigit() else "?"),
        ("kernel", platform.release()),
    ] + ([(role, f"{s.describe()}: `{s.binary}`, {s.version_line()}") for role, s in servers]
         if servers else [("redis", cmd("redis-server", "--version"))]) + [
        ("source", sha + (" + uncommitted changes" if dirty else "")),
    ]


def servers_of(a):
    """machine()'s servers for a harness's arguments."""
    target = getattr(a, "target_server", None)
    if target is None or target == a.server:
        return [("server", a.server)]
    return [("master server", a.server), ("target server", target)]


def stats(xs):
    xs = [x for x in xs if x is not None and x == x]  # drop None and NaN
    if not xs:
        return None
    return statistics.median(xs), min(xs), max(xs)


def ratio(x, ref):
    """x's median / ref's median, or '-'."""
    if not x or not ref or not x["wall"] or not ref["wall"]:
        return "-"
    return f"{x['wall'][0] / ref['wall'][0]:.2f}x"


def fmt(s, digits=2):
    if s is None:
        return "-"
    med, lo, hi = s
    return f"{med:.{digits}f} ({lo:.{digits}f}-{hi:.{digits}f})"


# What each arrival's rows measure, for the report's `arrival` column.
ARRIVAL_WHAT = {
    ("native", "first"): "first: own fork + RDB",
    ("sidecar", "first"): "**first of the epoch: snapshot + load**",
    ("sidecar", "later"): "later: table held",
    ("floor", "prepared"): "prepared RDB",
}


def arrivals(system, counts):
    """The (arrival, replicas) rows a system has, in report order: a sidecar's
    first replica (always one, alone) before its later ones."""
    if system == "floor":
        return [("prepared", 1)]
    if system.startswith("sidecar"):
        return [("first", 1)] + [("later", n) for n in counts]
    return [("first", n) for n in counts]


def per_run(rows, dataset, system, n, arrival=None):
    """{run: [rows of that sync]}"""
    out = {}
    for r in rows:
        if (r["dataset"], r["system"], r["replicas"]) == (dataset, system, n) and \
                arrival in (None, r.get("arrival")):
            out.setdefault(r["run"], []).append(r)
    return out


def summarize(rows, dataset, system, n, arrival=None):
    """Over runs. A sidecar's rows need `arrival`: its first replica and its
    later ones with N=1 are two syncs of the same run."""
    if arrival is None and system.startswith("sidecar"):
        raise ValueError("summarize: a sidecar's rows need an arrival (first or later)")
    runs = per_run(rows, dataset, system, n, arrival)
    if not runs:
        return None
    slowest = [max(x["wall_s"] for x in rs) for rs in runs.values()]
    mean_wall = [statistics.mean(x["wall_s"] for x in rs) for rs in runs.values()]
    first = [rs[0] for rs in runs.values()]
    return {
        "runs": len(runs),
        "wall": stats(slowest),
        "mean_wall": stats(mean_wall),
        "load": stats([max(x.get("load_s", float("nan")) for x in rs) for rs in runs.values()]),
        "snapshot": stats([x.get("snapshot_s") for x in first]),
        "MBps": stats([min(x["MBps"] for x in rs) for rs in runs.values()]),
        "transfer": stats([max(x.get("transfer_s", float("nan")) for x in rs)
                           for rs in runs.values()]),
        "master_cpu": stats([x.get("master_cpu_s") for x in first]),
        "master_rss": stats([x.get("master_peak_rss_mb") for x in first]),
        "master_cow": stats([x.get("master_cow_mb") for x in first]),
        "sidecar_cpu": stats([x.get("sidecar_cpu_s") for x in first]),
        "client_cpu": stats([x.get("client_cpu_s") for x in first]),
        "replica_cpu": stats([x.get("replica_cpu_s") for x in first]),
    }


def write(a, bench, command, date, host, datasets):
    os.makedirs(a.results_dir, exist_ok=True)
    suffix = servers_tag(a.server, a.target_server) + (f"-{a.tag}" if a.tag else "") + \
        ("-rdbcompression-no" if a.rdbcompression == "no" else "")
    stem = os.path.join(a.results_dir, f"{date}-{host}{suffix}")
    write_csv(stem + ".csv", CSV_FIELDS, bench.rows)
    systems = [s for s in SYSTEM_ORDER if s in a.systems]
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(stem + ".md", "w") as f:
        if a.target_server == a.server:
            what = f"native {a.server.describe()} replication vs the sidecar"
        else:
            what = (f"a {a.server.describe()} master into {a.target_server.describe()} "
                    "replicas, native replication vs the sidecar")
        f.write(f"# Full sync: {what}, on {host}, {date}\n\n"
                f"Command: `{command}`\n\n## Machine\n\n")
        f.write("\n".join(key_value_table(machine(repo, servers_of(a)))) + "\n")
        f.write("\n## Data sets (random bytes from gen_dataset, seed 1; all traffic on "
                "loopback or, for verbs, the RDMA device)\n\n")
        for ds in datasets:
            f.write(f"- {ds.describe()}\n")
        for ld in bench.loads:
            f.write(f"- loading `{ld['dataset']}` into the master took {ld['seconds']:.1f} s; "
                    f"master used_memory {ld['used_memory']}\n")
        f.write("\n## Systems\n\n")
        for s in systems:
            f.write(f"- **{s}**: {SYSTEM_WHAT[s]}\n")
        if any("verbs" in s for s in systems):
            f.write(f"\nsidecar-verbs ran on device `{a.device or 'rxe0'}` at {a.verbs_addr}"
                    + (" (rxe: Soft-RoCE, emulated in software; not hardware figures: "
                       "the kernel does per packet what an HCA does in hardware, so with "
                       "more replicas the times grow with the CPU they share and need not "
                       "stay flat; rdma-server's CPU is the figure that carries over)"
                       if (a.device or "rxe0").startswith("rxe") else "") + ".\n")
        elif any(s.startswith("sidecar") for s in systems):
            f.write("\nsidecar-verbs: not run (no `--verbs-addr`/RRS_VERBS_ADDR: no RDMA device "
                    "here). In the Soft-RoCE VM: `bash tests/vm/run-in-vm.sh --memory 8G -- "
                    "python3 bench/sync_bench.py --scale 0.05`.\n")
        noisy = len({(r["dataset"], r["system"], r["replicas"], r["run"]) for r in bench.rows
                     if r.get("others_cores", 0) > 0.10})
        servers = (f"{a.server.describe()}, `{a.server.binary}`, for the master and every "
                   "replica" if a.target_server == a.server
                   else f"the master {a.server.describe()}, `{a.server.binary}`; every replica "
                        f"(native, sidecar target, the floor's) {a.target_server.describe()}, "
                        f"`{a.target_server.binary}`; each replica's DBSIZE and DEBUG DIGEST "
                        f"checked against a {a.target_server.name} loaded by gen_dataset with the "
                        "same data set (digests differ between versions: Valkey 9.1 digests a "
                        "zset otherwise than Redis 7.0)")
        f.write(f"\nServers: {servers}. Every one: `{shlex.join(RedisServer.BASE_ARGS)}`; "
                f"the master `--rdbcompression {a.rdbcompression}`.\n\n## Pinning\n\n"
                f"{bench.pinning}\n\n## Quiet?\n\nLoad average (1/5/15 min) at start "
                f"{bench.loadavg_start}, at end {loadavg()}. Syncs that started with the "
                f"machine more than 15% busy: {bench.quiet.disturbed} (per sync: `busy_before` in "
                "the CSV). Syncs during which processes the harness did not start used more "
                f"than 0.10 cores: {noisy} "
                "(`others_cores` in the CSV).\n\n")
        f.write("## Results\n\n**Request to loaded** is what a user waits for: CLOCK_MONOTONIC "
                "wall time from the replicas' request (REPLICAOF for native and the floor, the "
                "rdma-clients' start for the sidecar) until the last of the N replicas is "
                "loaded; median (min-max) over runs. Native replicas (`first: own fork + RDB`) "
                "always wait for the master's fork and RDB. Each sidecar run is one epoch of an "
                "on-demand rdma-server (no `--snapshot-at-start`; `--snapshot-delay 0`, since "
                "native waits out no gathering delay either: its fork starts as soon as its N "
                "replicas are connected): its **first** replica arrives alone and waits for the "
                "snapshot its request starts, then loads (`snapshot s`: its request to "
                "rdma-server's `published` line); then, per replica count N, N **later** "
                "replicas arrive at once and find the table held. `x native diskless` is the "
                "row's median over native-diskless's median with the same N (a first replica: "
                "native-diskless with 1), both from this invocation. `load only` (secondary) is "
                "the sidecar's load without the wait for a snapshot: a first replica's "
                "`published` to its client's exit (including the client's retry gap, up to "
                "1 s), a later replica's whole figure; the figure this harness reported before "
                "snapshots were taken on demand. Master CPU is the master server's "
                "user+system time with its fork children, from the start to the end of the "
                "sync; a sidecar's first replica: the snapshot (rdma-server --source "
                f"{a.sidecar_source}); later: the epoch's snapshot + the sync. `transfer` is "
                "when the last client read its last table byte, from its start; `rdma-client "
                "CPU` is one client's user+system time (the mean over the N); `replica CPU` is "
                "the first replica server's, from its start to the end of the sync (it starts "
                "empty).\n\n")
        for ds in datasets:
            f.write(f"### {ds.name}\n\n| system | arrival | replicas at once | runs | "
                    "**request to loaded s: what a user waits for** | x native diskless "
                    "(same N) | load only s (secondary) | snapshot s | MB/s per replica | "
                    "transfer s | master CPU s | master peak RSS MiB | fork COW MiB | "
                    "rdma-server CPU s | rdma-client CPU s | replica CPU s |\n"
                    "|---|---|---:|---:|---|---:|---|---|---|---|---|---|---|---|---|---|\n")
            for s in systems:
                kind = "sidecar" if s.startswith("sidecar") else \
                    "floor" if s == "floor" else "native"
                for arrival, n in arrivals(s, a.replicas):
                    m = summarize(bench.rows, ds.name, s, n, arrival)
                    if m:
                        ref = summarize(bench.rows, ds.name, "native-diskless", n, "first")
                        f.write(f"| {s} | {ARRIVAL_WHAT[(kind, arrival)]} | {n} | {m['runs']} | "
                                f"**{fmt(m['wall'])}** | {ratio(m, ref)} | {fmt(m['load'])} | "
                                f"{fmt(m['snapshot'])} | {fmt(m['MBps'], 1)} | "
                                f"{fmt(m['transfer'])} | "
                                f"{fmt(m['master_cpu'])} | {fmt(m['master_rss'], 0)} | "
                                f"{fmt(m['master_cow'], 0)} | {fmt(m['sidecar_cpu'])} | "
                                f"{fmt(m['client_cpu'])} | {fmt(m['replica_cpu'])} |\n")
            builds = [b for b in bench.builds if b["dataset"] == ds.name]
            if builds:
                f.write("\nSnapshot, once per epoch (per run), on the first replica's request: "
                        "`snapshot` is that request to rdma-server's `published` line (scan: "
                        "`ready`, the server's start being the request), the "
                        "snapshot's whole time; `build_s` and the records are the line's "
                        "(`build_s`: from the master's +FULLRESYNC to the table built): ")
                for s in systems:
                    bs = [b for b in builds if b["system"] == s]
                    if bs:
                        f.write(f"{s} snapshot {fmt(stats([b['snapshot_s'] for b in bs]))} s, "
                                f"build_s {fmt(stats([b['build_s'] for b in bs]))} s, "
                                f"{bs[0]['records']:,} records, master CPU "
                                f"{fmt(stats([b['master_cpu_s'] for b in bs]))} s, table "
                                f"{bs[0]['table_bytes'] / 1e6:,.0f} MB; ")
                f.write("\n")
            refused = [(s, why) for (d, s), why in bench.refused.items() if d == ds.name]
            if refused:
                f.write(f"\n**Refused, not measured** ({a.server.describe()} master, "
                        f"{a.target_server.describe()} target):\n\n" +
                        "".join(f"- {s}: {why}\n" for s, why in refused))
            f.write("\n" + targets(bench.rows, ds.name, a.replicas) + "\n")
        if not a.no_plots:
            pngs = plot(bench.rows, datasets, systems, a.replicas, stem)
            if pngs:
                f.write("## Plots\n\n")
                for p in pngs:
                    f.write(f"![{os.path.basename(p)}]({os.path.basename(p)})\n\n")
    return stem


def targets(rows, dataset, counts):
    """The figures the issue asks to read off, computed from this run."""
    def arrival_of(system, arrival):
        if arrival:
            return arrival
        return "prepared" if system == "floor" else "first"

    def wall(system, n, arrival=None):
        m = summarize(rows, dataset, system, n, arrival_of(system, arrival))
        return m["wall"][0] if m and m["wall"] else None

    def load(system, n, arrival):
        m = summarize(rows, dataset, system, n, arrival)
        return m["load"][0] if m and m["load"] else None

    def cpu(system, n, arrival=None):
        m = summarize(rows, dataset, system, n, arrival_of(system, arrival))
        return m["master_cpu"][0] if m and m["master_cpu"] else None

    def vs(x, ref, what, target=None):
        r = x / ref
        return f"{r:.2f}x {what} ({ref:.2f} s" + (
            f"; target <= {target:.2f}x: {'met' if r <= target else 'missed'})" if target else ")")
    out = ["Read off (medians over runs; ratios: median / median, same invocation):\n"]
    nat, flo = wall("native-diskless", 1), wall("floor", 1)
    if nat and flo:
        out.append(f"- one replica: native diskless {nat:.2f} s = {nat / flo:.2f}x the ingest "
                   f"floor ({flo:.2f} s)")
    present = [s for s in SIDECARS if wall(s, 1, "first")]
    if present and not nat:
        out.append("- no native-diskless sync of 1 replica in this invocation (add it to "
                   "--systems, and 1 to --replicas): no first-replica ratio")
    # What a user waits for: the first replica of an epoch waits for the
    # snapshot its request starts, then loads. No target was set on it.
    for s in present:
        x, ld = wall(s, 1, "first"), load(s, 1, "first")
        line = f"- **first replica of an epoch, {s} (what a user waits for: snapshot + load): " \
               f"{x:.2f} s**"
        if nat:
            line += f" = **{x / nat:.2f}x native diskless** ({nat:.2f} s)"
        if ld:
            line += f"; of which load only (published to loaded) {ld:.2f} s"
        out.append(line)
    # Later replicas find the table held: load only. Replica mode's targets
    # (<= 0.85x native diskless, <= 1.15x the floor) were set on this figure,
    # a table built beforehand; restore mode next to it for comparison.
    for s in ("sidecar-tcp-replica", "sidecar-tcp", "sidecar-verbs-replica", "sidecar-verbs"):
        x, replica = wall(s, 1, "later"), s.endswith("-replica")
        refs = [(ref, what, tgt) for ref, what, tgt in ((nat, "native diskless", 0.85),
                                                        (flo, "the floor", 1.15)) if ref]
        if x and refs:
            how = "replica mode; its targets were set on a table built beforehand" if replica else \
                "restore mode, for comparison"
            out.append(f"- later replica (table held), one at a time, {s} ({how}): {x:.2f} s = "
                       + "; ".join(vs(x, ref, what, tgt if replica else None)
                                   for ref, what, tgt in refs))
    for s in SIDECARS:
        pairs = [(n, wall(s, n, "later"), wall("native-diskless", n)) for n in counts
                 if n > 1]
        pairs = [(n, x, r) for n, x, r in pairs if x and r]
        if pairs:
            out.append(f"- later replicas (table held) / native diskless, N at once, {s}: " +
                       ", ".join(f"{n} -> {x:.2f} s = {x / r:.2f}x ({r:.2f} s)"
                                 for n, x, r in pairs))
    top = max(counts)
    if top > 1:
        for s in SIDECARS:
            cn, cs = cpu("native-diskless", top), cpu(s, top, "later")
            if cn and cs is not None:
                out.append(f"- master CPU with {top} replicas: {s} {cs:.2f} s (the epoch's "
                           f"snapshot + the sync) vs native diskless {cn:.2f} s = {cs / cn:.2f}x "
                           "(target <= 0.35x)")
            n1, s1 = cpu("native-diskless", 1), cpu(s, 1, "later")
            if None not in (cn, cs, n1, s1):
                dn, ds_ = (cn - n1) / (top - 1), (cs - s1) / (top - 1)
                line = (f"- master CPU per added replica (1 -> {top}): {s} {ds_:+.3f} s, native "
                        f"diskless {dn:+.3f} s")
                # One fork serves replicas that arrive together, so native's own
                # slope can be ~0 (or negative: noise); a ratio would mean nothing.
                line += (f" = {ds_ / dn:.1%} of native's (target <= 5%)" if dn > 0.05 else
                         ": native adds nothing measurable either (one fork served all "
                         "replicas), so the ratio is undefined")
                out.append(line)
    for s in SIDECARS:
        walls = [(n, wall(s, n, "later")) for n in counts]
        if all(w for _, w in walls) and len(walls) > 1:
            out.append(f"- {s}, later replicas (table held), time until all N loaded: " +
                       ", ".join(f"{n} -> {w:.2f} s" for n, w in walls))
    return "\n".join(out) + "\n" if len(out) > 1 else ""


def plot(rows, datasets, systems, counts, stem):
    plt = pyplot("sync_bench-matplotlib", "report: matplotlib is not installed (bash "
                 "bench/run.sh installs python3-matplotlib): no plots")
    if plt is None:
        return []
    pngs = []

    def save(fig, name):
        fig.tight_layout()
        fig.savefig(f"{stem}-{name}.png", dpi=100)
        plt.close(fig)
        pngs.append(f"{stem}-{name}.png")

    def arrival(s):
        return "prepared" if s == "floor" else "later" if s.startswith("sidecar") else "first"

    for key, label, name in (("wall", "request to all loaded (s)", "sync-time"),
                             ("master_cpu", "master CPU time incl. fork children (s)",
                              "master-cpu")):
        fig, axes = plt.subplots(1, len(datasets), figsize=(5 * len(datasets), 4), squeeze=False)
        for ax, ds in zip(axes[0], datasets):
            for s in systems:
                pts = [(n, summarize(rows, ds.name, s, n, arrival(s))) for n in counts]
                pts = [(n, m[key][0]) for n, m in pts if m and m[key]]
                if pts:
                    line, = ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                                    label=s + (" later (table held)"
                                               if s.startswith("sidecar") else ""))
                m = summarize(rows, ds.name, s, 1, "first") if s.startswith("sidecar") else None
                if m and m[key]:  # the epoch's first replica: one point, a star
                    ax.plot([1], [m[key][0]], marker="*", markersize=12, linestyle="none",
                            color=line.get_color() if pts else None,
                            label=f"{s} first (snapshot + load)")
            ax.set_title(ds.name)
            ax.set_xlabel("replicas syncing at once")
            ax.set_xticks(counts)
            ax.set_ylabel(label)
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
            ax.legend(fontsize="small")
        save(fig, name)
    fig, ax = plt.subplots(figsize=(max(5, 2.5 * len(datasets)), 4))
    width = 0.8 / max(1, len(systems))
    for i, s in enumerate(systems):
        ys = []
        for ds in datasets:  # what a user waits for: a sidecar's first replica
            m = summarize(rows, ds.name, s, 1, "prepared" if s == "floor" else "first")
            ys.append(m["MBps"][0] if m and m["MBps"] else 0)
        ax.bar([j + i * width for j in range(len(datasets))], ys, width, label=s)
    ax.set_xticks([j + width * (len(systems) - 1) / 2 for j in range(len(datasets))])
    ax.set_xticklabels([ds.name for ds in datasets])
    ax.set_ylabel("MB/s of values, one replica\n(request to loaded; sidecar: first of an epoch)",
                  fontsize="small")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize="small")
    save(fig, "throughput")
    return pngs
