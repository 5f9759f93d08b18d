#!/usr/bin/env python3
"""Full-sync benchmark: native Redis/Valkey replication vs the sidecar, 1..N replicas.

For each data set (--datasets), on one master loaded by gen_dataset, every
system (--systems) gives fresh, empty replicas a full copy, --runs times.
Every server runs the --server version (a NAME from `bash tests/servers.sh
list`; default redis-7.0), or, with --target-server, the master runs --server
and every replica (native, sidecar target, the floor's) --target-server.

The headline figure is what a user waits for: per replica, the wall time
from its request to its copy loaded, including any snapshot of the master it
had to wait for (CLOCK_MONOTONIC, never CPU time).

  native-disk      REPLICAOF to N replicas at once; the master forks and
                   writes an RDB to disk, then streams it (replicas arriving
                   meanwhile share that RDB)
  native-diskless  REPLICAOF to N replicas at once; the master forks and
                   streams the RDB straight to them (repl-diskless-sync-delay
                   5, -max-replicas N: one fork for all N); replicas load with
                   repl-diskless-load swapdb. The baseline.
                   Every native replica is a "first": it always waits for a
                   fork and RDB of its own sync.
  sidecar-tcp      per run, one epoch of an on-demand rdma-server (no
                   --snapshot-at-start), with --snapshot-delay 0 because the
                   native comparison waits out no gathering delay either: its
                   fork starts as soon as its N replicas are connected
                   (repl-diskless-sync-max-replicas N cuts the 5 s delay
                   short), and the master serving rdma-server's PSYNC runs
                   repl-diskless-sync-delay 0; rdma-server's default 3 s
                   would be a wait charged to the sidecar alone. Also
                   --table-retain -1, so the table cannot be given back
                   between the run's syncs. Once it prints `ready table=none`:
                   first   one replica's rdma-client starts alone (t0). The
                           server answers "snapshot pending" and takes the
                           master's full sync (--sidecar-source psync: the
                           master forks); it serves the table as soon as
                           it is laid out (a streamed epoch; over verbs in
                           growing registrations) and the client, retrying
                           (100 ms doubling to 1 s), loads while the RDB
                           still streams in. Its figure: t0 to the
                           client's exit.
                   later   then, for each N of --replicas, N fresh replicas'
                           clients start at once on the same epoch (the table
                           held; each client's epoch= is checked): start to
                           exit, all N done. Load only, as the whole figure
                           was before on-demand snapshots.
                   over TCP, --mode restore (pipelined RESTORE).
                   --sidecar-source scan builds at start (rdma-server has no
                   on-demand scan): t0 is then rdma-server's spawn, with the
                   first client started at once (it waits in the backlog).
  sidecar-verbs    the same over RDMA (needs --device / RRS_VERBS_ADDR)
  sidecar-tcp-replica, sidecar-verbs-replica
                   the same, but each rdma-client runs --mode replica: the
                   replica (repl-diskless-load swapdb) is made a replica of
                   the client, which streams it an RDB written from the table
  floor            a replica loading the master's prepared RDB from a fake
                   master that does nothing but send the file (rdb_feeder.py):
                   the fastest a replica can ingest on this machine

Columns of the report (rows by system, arrival, replicas at once):
  request to loaded s (what a user waits for)
                   per run the time until all N replicas of the sync are
                   loaded; median (min-max) over runs. For a sidecar's first
                   replica: its snapshot + its load; its row precedes the
                   system's later rows.
  x native diskless
                   that median / native-diskless's median with the same
                   number of replicas (a first replica: native-diskless with
                   1), same invocation. The read-off lines give first-replica
                   sidecar / native-diskless and later-replica sidecar /
                   native-diskless.
  snapshot s       sidecar first: t0 to the `published` line (the harness
                   polls rdma-server's stdout every 10 ms): the snapshot's
                   whole time. The line's own build_s (the master's RDB,
                   from its +FULLRESYNC, and the table build: without the
                   client's wait before asking) and records are in the
                   report's snapshot line.
  load only s      secondary: sidecar first: `published` to the client's
                   exit (with the client's retry gap); later: = request to
                   loaded (nothing to wait for). Native: none separable.
Also per sync: MB/s, keys/s, the clients' transfer part, the master server
process's CPU time (its fork children included; for the first replica its
snapshot, for later syncs the epoch's snapshot plus the sync) and peak RSS,
copy-on-write of its fork child, rdma-server's CPU time. Every copy is
checked (DBSIZE, DEBUG DIGEST). A target that cannot take the master's data
(rdma-client exit 5; a replica that cannot load the master's RDB version) is
reported as refused and not measured. Writes
bench/results/<date>-<host>[-SERVER][-tag].{md,csv} and PNG plots (SERVER:
the --server name unless redis-7.0, `A-to-B` with another --target-server).
See bench/README.md.
"""
import argparse
import datetime
import os
import re
import resource
import socket
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from benchlib import (add_build_dir_arg, add_results_args, add_server_args, add_wait_quiet_arg,
                      built_binary, check_systems, choose_pinning, cleanup_work, command_line,
                      resolve_servers, run_harness, share_sidecar_secret, wrote_report,
                      LOOPBACK, REPO_DIR, BenchError, Disturbance, Procs, RedisServer, Refused,
                      Sidecar, cpu_seconds, kv_fields, load_dataset, master_idle, peak_rss_mb,
                      reset_peak_rss, synced_or_refused, tail, wait_until)
import report

# name -> (keys, value_size, gen_dataset --type): the four data sets.
DATASETS = {
    "default": (1_000_000, 1000, "strings"),
    "small": (10_000_000, 16, "strings"),
    "large": (1000, 1 << 20, "strings"),
    "mixed": (1_000_000, 1000, "mixed"),
}
SYSTEMS = ["native-disk", "native-diskless", "sidecar-tcp", "sidecar-verbs", "sidecar-tcp-replica",
           "sidecar-verbs-replica", "floor"]
REPLICA_SWAPDB = ["--repl-diskless-load", "swapdb"]
QUIET = 0.15  # CPU busy fraction above which a measurement is flagged as disturbed
OTHERS = 0.10  # cores other processes used during a sync above which it is flagged
DIGEST_TIMEOUT_S = 600  # DEBUG DIGEST of the small data set (10M keys) takes minutes


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", default="default",
                   help=f"comma-separated, from {', '.join(DATASETS)}, or 'all' (default: default)")
    p.add_argument("--scale", type=float, default=1.0,
                   help="multiply every data set's key count (e.g. 0.05 in the Soft-RoCE VM; "
                        "0.02: 20 MB of the default data set, for a smoke run)")
    p.add_argument("--systems", default="auto",
                   help=f"comma-separated, from {', '.join(SYSTEMS)}; auto: all, "
                        "sidecar-verbs(-replica) only when an RDMA device is given or found")
    p.add_argument("--replicas", default="1,2,4", help="replica counts (default 1,2,4)")
    p.add_argument("--sidecar-source", choices=("psync", "scan"), default="psync",
                   help="rdma-server --source for the sidecar systems (default psync)")
    p.add_argument("--runs", type=int, default=3, help="repetitions; median, min, max reported")
    add_server_args(p, target=True)
    p.add_argument("--device", default=os.environ.get("RRS_VERBS_DEVICE"),
                   help="RDMA device for sidecar-verbs, e.g. mlx5_0 (default $RRS_VERBS_DEVICE)")
    p.add_argument("--verbs-addr", default=os.environ.get("RRS_VERBS_ADDR"),
                   help="an address on that device's netdev for rdma-server to listen on "
                        "(default $RRS_VERBS_ADDR; tests/vm/guest-setup.sh sets it)")
    add_build_dir_arg(p)
    p.add_argument("--master-cpu", type=int, default=0)
    p.add_argument("--replica-cpu", type=int, default=1,
                   help="CPU for every replica (with 2 cores they share it)")
    p.add_argument("--client-cpu", default="master", metavar="CPU|master|none",
                   help="CPU for rdma-client (its --cpu): 'master' (default) puts it on the "
                        "master's CPU, idle while replicas load from the sidecar, so it never "
                        "shares its replica's core; 'none' leaves it to the scheduler "
                        "(bench/README.md, Pinning)")
    p.add_argument("--server-cpu", default="none", metavar="CPU|none",
                   help="CPU for rdma-server (its --cpu); 'none' (default) leaves it to the "
                        "scheduler. With the client on the replica's CPU too, the master's "
                        "CPU runs only the master and its fork child, as for native "
                        "(bench/README.md, Pinning)")
    p.add_argument("--no-pin", action="store_true", help="pin nothing")
    add_wait_quiet_arg(p, "sync", QUIET)
    p.add_argument("--rdbcompression", choices=("yes", "no"), default="yes",
                   help="the master's rdbcompression (Redis' default: yes). Random values do "
                        "not compress, so 'yes' only spends CPU on LZF attempts: it about doubles "
                        "native syncs and SCAN+DUMP here; 'no' adds -rdbcompression-no to the "
                        "results file name")
    add_results_args(p)
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    a = p.parse_args(argv)
    names = list(DATASETS) if a.datasets == "all" else a.datasets.split(",")
    for n in names:
        if n not in DATASETS:
            p.error(f"--datasets: unknown data set {n!r}; choose from {', '.join(DATASETS)}")
    a.datasets = names
    try:
        a.replicas = sorted({int(x) for x in a.replicas.split(",")})
    except ValueError:
        p.error("--replicas expects counts like 1,2,4")
    if a.replicas[0] < 1 or a.runs < 1 or a.scale <= 0:
        p.error("--replicas, --runs and --scale must be positive")
    if a.device and not a.verbs_addr:
        a.verbs_addr = device_address(a.device)
        if not a.verbs_addr:
            p.error(f"--device {a.device}: found no IPv4 address on its network interface "
                    "(/sys/class/infiniband/DEV/ports/1/gid_attrs/ndevs/0); give --verbs-addr")
    if a.systems == "auto":
        a.systems = [s for s in SYSTEMS if "verbs" not in s or a.verbs_addr]
    else:
        a.systems = a.systems.split(",")
        check_systems(p, a.systems, SYSTEMS)
        if any("verbs" in s for s in a.systems) and not a.verbs_addr:
            p.error("sidecar-verbs needs --verbs-addr (an address on the RDMA device's netdev); "
                    "in the Soft-RoCE VM tests/vm/guest-setup.sh sets RRS_VERBS_ADDR")
    resolve_servers(p, a)
    return a


def device_address(device):
    """An IPv4 address on the network interface behind RDMA device `device`
    (RoCE: its netdev; IPoIB: the ib interface), or None."""
    try:
        with open(f"/sys/class/infiniband/{device}/ports/1/gid_attrs/ndevs/0") as f:
            netdev = f.read().strip()
        out = subprocess.run(["ip", "-4", "-o", "addr", "show", "dev", netdev],
                             capture_output=True, text=True).stdout
    except OSError:
        return None
    m = re.search(r"inet (\d+\.\d+\.\d+\.\d+)/", out)
    return m.group(1) if m else None


class Dataset:
    def __init__(self, name, scale):
        keys, self.value_size, self.type = DATASETS[name]
        self.name = name
        self.keys = max(1, int(keys * scale))
        self.payload = self.keys * self.value_size

    def describe(self):
        kind = "strings" if self.type == "strings" else \
            "mixed types (string, hash, list, set, zset, stream; key i has type i % 6)"
        return (f"{self.name}: {self.keys:,} keys x {self.value_size:,} random bytes, {kind} "
                f"= {self.payload / 1e6:,.0f} MB of values")


class Bench:
    def __init__(self, args):
        self.a = args
        for rel in ("bench/gen_dataset", "server/rdma-server", "client/rdma-client"):
            self.binary(rel)  # fail before minutes of work, not after
        self.client_cpu = None if args.client_cpu == "none" else \
            args.master_cpu if args.client_cpu == "master" else int(args.client_cpu)
        self.server_cpu = None if args.server_cpu == "none" else int(args.server_cpu)
        client = "unpinned" if self.client_cpu is None else f"CPU {self.client_cpu} (its --cpu)"
        server = "unpinned" if self.server_cpu is None else f"CPU {self.server_cpu} (its --cpu)"
        self.pinning = choose_pinning(args, (
            f"master server: CPU {args.master_cpu} (its fork children inherit it); every "
            f"replica server and gen_dataset: CPU {args.replica_cpu}; rdma-client: "
            f"{client}; rdma-server: {server}; rdb_feeder: unpinned. With 2 cores, replicas "
            "syncing at once share one core, as they would share a replica host."))
        if args.master_cpu is None:  # nothing pinned
            self.client_cpu = self.server_cpu = None
        self.procs = Procs()
        self.work = tempfile.mkdtemp(prefix="sync_bench.")
        self.rows = []         # one dict per replica per sync
        self.builds = []       # one dict per table build (sidecar epoch)
        self.loads = []        # one dict per data set load
        self.quiet = Disturbance(args.wait_quiet, QUIET, OTHERS, "sync")
        self.loadavg_start = report.loadavg()
        self.master = None
        self.refused = {}      # (data set, system) -> why the target refused

    # ---- setup -------------------------------------------------------------

    def binary(self, rel):
        return built_binary(
            self.a.build_dir, rel,
            f"build it with bash bench/run.sh (or cmake -S {REPO_DIR} -B {self.a.build_dir} "
            f"-G Ninja && cmake --build {self.a.build_dir})")

    def client_pin(self):
        """rdma-client's --cpu, as --client-cpu says."""
        return [] if self.client_cpu is None else ["--cpu", str(self.client_cpu)]

    def timeout_s(self, ds, replicas=1):
        return 180 + replicas * ds.payload / 2e6  # generous: 2 MB/s is far below any path

    def start_master(self, ds):
        if self.master:
            self.master.stop()
        self.master = RedisServer(self.procs, f"master-{ds.name}", self.work, self.a.master_cpu,
                                  ["--rdbcompression", self.a.rdbcompression],
                                  self.a.server).start()
        print(f"\n== {ds.describe()}\nloading the master (port {self.master.port}) ...",
              flush=True)
        wall, detail = load_dataset(self.procs, self.binary("bench/gen_dataset"),
                                    self.master.port, ds.keys, ds.value_size, ds.type,
                                    self.a.replica_cpu, self.timeout_s(ds))
        self.master_keys = self.master.call("DBSIZE")
        if self.master_keys != ds.keys:
            raise BenchError(f"master has {self.master_keys} keys, expected {ds.keys}")
        self.master_digest = self.master.call("DEBUG", "DIGEST", timeout=DIGEST_TIMEOUT_S)
        mem = self.master.info("memory")["used_memory_human"]
        self.loads.append({"dataset": ds.name, "seconds": wall, "used_memory": mem,
                           "detail": detail})
        print(f"  loaded in {wall:.1f} s; used_memory {mem}", flush=True)
        self.expected_digest, self.digest_of = self.master_digest, "the master's"
        if self.a.target_server != self.a.server:
            self.reference_digest(ds)

    def reference_digest(self, ds):
        """DEBUG DIGEST is the master's version's: Valkey 9.1 digests a zset
        otherwise than Redis 7.0. So replicas of another version are checked
        against a server of their version loaded with the same data set."""
        t = self.a.target_server
        ref = RedisServer(self.procs, f"reference-{ds.name}", self.work, self.a.replica_cpu,
                          (), t).start()
        try:
            wall, _ = load_dataset(self.procs, self.binary("bench/gen_dataset"), ref.port,
                                   ds.keys, ds.value_size, ds.type, self.a.replica_cpu,
                                   self.timeout_s(ds))
            n = ref.call("DBSIZE")
            if n != self.master_keys:
                raise BenchError(f"the {t.describe()} reference has {n} keys, the master "
                                 f"{self.master_keys}")
            self.expected_digest = ref.call("DEBUG", "DIGEST", timeout=DIGEST_TIMEOUT_S)
        finally:
            ref.stop()
        self.digest_of = f"that of a {t.describe()} loaded with the same data set"
        print(f"  a {t.describe()} loaded with the same data set in {wall:.1f} s: the replicas' "
              f"DEBUG DIGEST must be its", flush=True)

    def configure_master(self, system, replicas):
        diskless = "yes" if system == "native-diskless" else "no"
        # One fork for all N replicas: start as soon as N are connected, else
        # wait up to 5 s (Redis' default delay) for them.
        self.master.call("CONFIG", "SET", "repl-diskless-sync", diskless)
        self.master.call("CONFIG", "SET", "repl-diskless-sync-delay", "5")
        self.master.call("CONFIG", "SET", "repl-diskless-sync-max-replicas", str(replicas))

    def wait_master_idle(self, ds):
        wait_until("master to be idle", lambda: master_idle(self.master), self.timeout_s(ds))

    def start_replicas(self, n, tag, args=()):
        """n fresh, empty replicas (native, sidecar targets, the floor's) of --target-server."""
        return [RedisServer(self.procs, f"{tag}-r{i}", self.work, self.a.replica_cpu,
                            list(args), self.a.target_server).start() for i in range(n)]

    def stop_all(self, replicas):
        for r in replicas:
            r.stop()

    def verify(self, replica, what):
        n = replica.call("DBSIZE")
        if n != self.master_keys:
            raise BenchError(f"{what}: replica has {n} keys, master {self.master_keys}")
        if replica.call("DEBUG", "DIGEST", timeout=DIGEST_TIMEOUT_S) != self.expected_digest:
            raise BenchError(f"{what}: DEBUG DIGEST differs from {self.digest_of}")

    def master_cost_start(self):
        reset_peak_rss(self.master.proc.pid)
        return cpu_seconds(self.master.proc.pid)

    def master_cost_end(self, cpu0):
        pid = self.master.proc.pid
        cow = int(self.master.info("persistence").get("rdb_last_cow_size", 0))
        return {"master_cpu_s": cpu_seconds(pid) - cpu0, "master_peak_rss_mb": peak_rss_mb(pid),
                "master_cow_mb": cow / 2**20}

    def record(self, ds, system, n, run, i, wall, extra):
        row = {"dataset": ds.name, "system": system, "replicas": n, "run": run + 1,
               "replica": i + 1, "wall_s": wall, "MBps": ds.payload / 1e6 / wall,
               "keys_per_s": ds.keys / wall, "keys": ds.keys, "value_size": ds.value_size}
        row.update(extra)
        self.rows.append(row)

    # ---- systems -----------------------------------------------------------

    def native(self, ds, system, n, run):
        self.wait_master_idle(ds)
        self.configure_master(system, n)
        replicas = self.start_replicas(n, f"{system}{run}",
                                       REPLICA_SWAPDB if system == "native-diskless" else ())
        busy = self.quiet.before()
        cpu0 = self.master_cost_start()
        t0 = time.monotonic()
        for r in replicas:
            r.call("REPLICAOF", LOOPBACK, self.master.port)
        done = [None] * n

        def all_synced():
            for i, r in enumerate(replicas):
                if done[i] is None and synced_or_refused(r):
                    done[i] = time.monotonic()
            return all(done)
        try:
            wait_until(f"{system} full sync of {n} replicas", all_synced, self.timeout_s(ds, n))
        except Refused:
            self.stop_all(replicas)  # the master drops them and finishes its fork
            raise
        others = self.quiet.during()
        rcpu = [cpu_seconds(r.proc.pid, children=False) for r in replicas]
        for r in replicas:  # detach, so the master is idle for the next sync
            r.call("REPLICAOF", "NO", "ONE")
        self.wait_master_idle(ds)
        cost = self.master_cost_end(cpu0)
        for i, r in enumerate(replicas):
            self.verify(r, f"{system} replica {i + 1}")
            # Every native replica is a first: it waits for the fork and RDB of its sync.
            self.record(ds, system, n, run, i, done[i] - t0, dict(cost, arrival="first",
                        busy_before=busy, others_cores=others, replica_cpu_s=rcpu[i]))
            r.stop()

    def sidecar(self, ds, system, counts, run):
        """One epoch per run: its first replica alone (the snapshot taken on its
        request, then its load), then each replica count on the held table."""
        verbs = "verbs" in system
        host = self.a.verbs_addr if verbs else LOOPBACK
        self.wait_master_idle(ds)
        # psync: the master forks for the sidecar at once, as for one replica.
        self.master.call("CONFIG", "SET", "repl-diskless-sync", "yes")
        self.master.call("CONFIG", "SET", "repl-diskless-sync-delay", "0")
        server = Sidecar(self.procs, f"rdma-server-{system}{run}", self.work)
        # No --snapshot-at-start: the snapshot waits for the first client.
        # --snapshot-delay 0: native waits out no gathering delay either (see
        # the docstring). --table-retain -1: the table stays held for the
        # later syncs however long the checks between them take.
        argv = [self.binary("server/rdma-server"),
                "--redis", f"{LOOPBACK}:{self.master.port}",
                "--listen", host, "--source", self.a.sidecar_source,
                "--transport", "verbs" if verbs else "tcp",
                "--snapshot-delay", "0", "--table-retain", "-1"]
        if self.server_cpu is not None:
            argv += ["--cpu", str(self.server_cpu)]
        try:
            build = self.sidecar_first(ds, system, run, server, argv, host)
            for n in counts:
                self.sidecar_sync(ds, system, n, run, server, host, build)
        finally:
            server.stop()

    def start_client(self, tag, i, host, port, replica, transport, mode, extra=()):
        log = open(os.path.join(self.work, f"{tag}-client{i}.log"), "w")
        argv = [self.binary("client/rdma-client"), host, str(port), "--redis",
                f"{LOOPBACK}:{replica.port}", "--transport", transport, "--mode", mode,
                "--quiet"] + self.client_pin() + list(extra)
        return self.procs.start("rdma-client", argv, stdout=subprocess.PIPE, stderr=log,
                                text=True), log

    def finish_clients(self, system, clients, replicas, mode, epoch):
        """Reaps the exited clients; raises Refused (exit 5) or BenchError;
        checks each replica (the epoch it was loaded from, its offset in
        replica mode, DBSIZE, DEBUG DIGEST); returns each client's `synced`
        fields."""
        outs = []
        for p, log in clients:
            log.close()
            outs.append(p.stdout.read())
            p.stdout.close()
            self.procs.stop(p)
        for (p, log), out in zip(clients, outs):
            if p.returncode == 5:  # the target cannot take the table: the pair is refused
                self.stop_all(replicas)
                raise Refused("rdma-client refused the target (exit 5): " +
                              refusal(tail(log.name)))
            if p.returncode != 0:
                raise BenchError(f"rdma-client exited {p.returncode}:\n{out}{tail(log.name)}")
        fields = []
        for i, (out, r) in enumerate(zip(outs, replicas)):
            synced = [ln for ln in out.splitlines() if ln.startswith("synced")]
            f = kv_fields(synced[-1]) if synced else {}
            if f.get("epoch") != epoch:
                raise BenchError(f"{system} replica {i + 1}: loaded epoch {f.get('epoch')}, "
                                 f"rdma-server published epoch {epoch} (a second snapshot?)")
            if mode == "replica":
                # Left a replica of the client's closed listener: it must be at
                # the table's offset; then detach it, so it stops reconnecting.
                at = r.info("replication").get("master_repl_offset")
                if at != f.get("offset"):
                    raise BenchError(f"{system} replica {i + 1}: master_repl_offset {at}, the "
                                     f"client reported offset={f.get('offset')}")
                r.call("REPLICAOF", "NO", "ONE")
            self.verify(r, f"{system} replica {i + 1}")
            fields.append(f)
        return fields

    def sidecar_first(self, ds, system, run, server, argv, host):
        """The epoch's first replica, alone: from its client's start (psync: on
        a server that printed `ready table=none`) to the client's exit, which
        includes the snapshot the server takes for it. Returns the build."""
        mode = "replica" if system.endswith("-replica") else "restore"
        transport = "verbs" if "verbs" in system else "tcp"
        on_demand = self.a.sidecar_source == "psync"
        replicas = self.start_replicas(1, f"{system}{run}-first",
                                       REPLICA_SWAPDB if mode == "replica" else ())
        if on_demand:
            ready_s, line = server.start(argv, self.timeout_s(ds))
            if "table=none" not in line.split():
                raise BenchError(f"rdma-server took a snapshot at start, not on demand: {line}")
        busy = self.quiet.before()
        cpu0 = self.master_cost_start()
        kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        if not on_demand:
            # scan builds at start: the request is rdma-server's start, and the
            # first client waits in its listen backlog until the table is ready.
            server.spawn(argv)
        srv0 = cpu_seconds(server.proc.pid, children=False)
        # "snapshot pending" moves the client's deadline on; a scan build only
        # has the backlog, so the client gets the harness's whole timeout.
        clients = [self.start_client(f"{system}{run}-first", 0, host, server.port, replicas[0],
                                     transport, mode,
                                     ["--connect-timeout", str(int(self.timeout_s(ds)))])]
        word = "published" if on_demand else "ready"
        seen = {}  # the table's line, and when the harness first saw it
        done = [None]

        def exited():
            if "line" not in seen:
                ln = server_line(server, word)
                if ln:
                    seen["line"], seen["t"] = ln, time.monotonic()
            if server.proc.poll() is not None:
                raise BenchError(f"{server.name} exited {server.proc.returncode}:\n"
                                 f"{tail(server.log)}{tail(server.log + '.stderr')}")
            if clients[0][0].poll() is not None:
                done[0] = time.monotonic()
                return True
            return False
        wait_until(f"{system}'s first rdma-client (snapshot + load)", exited,
                   self.timeout_s(ds) * 2)
        kids1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        others = self.quiet.during()
        rcpu = cpu_seconds(replicas[0].proc.pid, children=False)
        sidecar_cpu = cpu_seconds(server.proc.pid, children=False) - srv0
        if "line" not in seen:
            if clients[0][0].returncode == 0:
                raise BenchError(f"rdma-client loaded, but rdma-server printed no `{word}` line:"
                                 f"\n{tail(server.log)}")
            self.finish_clients(system, clients, replicas, mode, None)  # raises its failure
        # psync: the master reaps its fork child just after the RDB is sent;
        # only then is the child's CPU in the master's account (cstime).
        wait_until("the master's fork child to be reaped",
                   lambda: master_idle(self.master, replicas_allowed=1), self.timeout_s(ds))
        cost = self.master_cost_end(cpu0)
        if not on_demand:
            cost["master_cow_mb"] = 0.0  # no fork: rdb_last_cow_size is an older sync's
        fields = kv_fields(seen["line"])
        if fields.get("records") != str(ds.keys):
            raise BenchError(f"rdma-server published {fields.get('records')} records, "
                             f"expected {ds.keys}: {seen['line']}")
        f = self.finish_clients(system, clients, replicas, mode, fields.get("epoch"))[0]
        wall, snapshot_s = done[0] - t0, seen["t"] - t0
        build = {"dataset": ds.name, "system": system, "run": run + 1,
                 "epoch": fields.get("epoch"), "records": int(fields["records"]),
                 "build_s": float(fields.get("build_s", "nan")), "snapshot_s": snapshot_s,
                 "table_bytes": int(fields.get("bytes", 0)),
                 "sidecar_cpu_s": sidecar_cpu,
                 "sidecar_peak_rss_mb": peak_rss_mb(server.proc.pid), **cost}
        self.builds.append(build)
        self.record(ds, system, 1, run, 0, wall, {
            "arrival": "first", "snapshot_s": snapshot_s, "load_s": done[0] - seen["t"],
            "transfer_s": float(f.get("transfer_s", "nan")),
            "client_s": float(f.get("seconds", "nan")),
            "client_cpu_s": kids1.ru_utime + kids1.ru_stime - kids0.ru_utime - kids0.ru_stime,
            "rdb_bytes": int(f.get("rdb_bytes", 0)),
            "master_cpu_s": cost["master_cpu_s"], "master_cpu_sync_s": cost["master_cpu_s"],
            "master_peak_rss_mb": cost["master_peak_rss_mb"],
            "master_cow_mb": cost["master_cow_mb"], "sidecar_cpu_s": sidecar_cpu,
            "build_s": build["build_s"], "epoch": build["epoch"], "busy_before": busy,
            "others_cores": others, "replica_cpu_s": rcpu})
        replicas[0].stop()
        print(f"  run {run + 1} {system}: first replica {wall:.2f} s = snapshot "
              f"{snapshot_s:.2f} s ({build['records']:,} records; its line's build_s "
              f"{build['build_s']:.2f}) + load {done[0] - seen['t']:.2f} s; master CPU "
              f"{cost['master_cpu_s']:.2f} s", flush=True)
        return build

    def sidecar_sync(self, ds, system, n, run, server, host, build):
        """n later replicas of the epoch at once: the table is held."""
        # --mode replica: the replica loads the client's RDB as a full sync, so
        # it gets swapdb, as native diskless and the floor's replicas do.
        mode = "replica" if system.endswith("-replica") else "restore"
        replicas = self.start_replicas(n, f"{system}{run}-{n}",
                                       REPLICA_SWAPDB if mode == "replica" else ())
        busy = self.quiet.before()
        cpu0 = self.master_cost_start()
        srv0 = cpu_seconds(server.proc.pid, children=False)
        # The clients are the only children reaped until all have exited.
        kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        transport = "verbs" if "verbs" in system else "tcp"
        t0 = time.monotonic()
        clients = [self.start_client(f"{system}{run}-{n}", i, host, server.port, r, transport,
                                     mode) for i, r in enumerate(replicas)]
        done = [None] * n

        def all_exited():
            for i, (p, _) in enumerate(clients):
                if done[i] is None and p.poll() is not None:
                    done[i] = time.monotonic()
            return all(done)
        wait_until(f"{n} rdma-clients", all_exited, self.timeout_s(ds, n))
        kids1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        others = self.quiet.during()
        rcpu = [cpu_seconds(r.proc.pid, children=False) for r in replicas]
        client_cpu = (kids1.ru_utime + kids1.ru_stime - kids0.ru_utime - kids0.ru_stime) / n
        cost = self.master_cost_end(cpu0)
        # The master's share of this sync: the table build (once per epoch) + now.
        total_master = build["master_cpu_s"] + cost["master_cpu_s"]
        sidecar_cpu = cpu_seconds(server.proc.pid, children=False) - srv0
        fields = self.finish_clients(system, clients, replicas, mode, build["epoch"])
        for i, (f, r) in enumerate(zip(fields, replicas)):
            self.record(ds, system, n, run, i, done[i] - t0, {
                "arrival": "later", "load_s": done[i] - t0,
                "transfer_s": float(f.get("transfer_s", "nan")),
                "client_s": float(f.get("seconds", "nan")),
                "client_cpu_s": client_cpu, "rdb_bytes": int(f.get("rdb_bytes", 0)),
                "master_cpu_s": total_master, "master_cpu_sync_s": cost["master_cpu_s"],
                "master_peak_rss_mb": max(cost["master_peak_rss_mb"] or 0,
                                          build["master_peak_rss_mb"] or 0),
                "master_cow_mb": 0.0, "sidecar_cpu_s": sidecar_cpu,
                "build_s": build["build_s"], "epoch": build["epoch"], "busy_before": busy,
                "others_cores": others, "replica_cpu_s": rcpu[i]})
            r.stop()

    def floor(self, ds, run, rdb):
        from rdb_feeder import RdbFeeder
        self.wait_master_idle(ds)
        feeder = RdbFeeder(rdb)
        port = feeder.start()
        try:
            replica = self.start_replicas(1, f"floor{run}", REPLICA_SWAPDB)[0]
            busy = self.quiet.before()
            t0 = time.monotonic()
            replica.call("REPLICAOF", LOOPBACK, port)
            try:
                t1 = wait_until("replica loading the prepared RDB",
                                lambda: synced_or_refused(replica), self.timeout_s(ds))
            except Refused:
                replica.stop()
                raise
            others = self.quiet.during()
            rcpu = cpu_seconds(replica.proc.pid, children=False)
            replica.call("REPLICAOF", "NO", "ONE")
            self.verify(replica, "floor replica")
            self.record(ds, "floor", 1, run, 0, t1 - t0, {"arrival": "prepared",
                        "busy_before": busy,
                        "others_cores": others, "replica_cpu_s": rcpu})
            replica.stop()
        finally:
            feeder.stop()

    def prepared_rdb(self, ds):
        """The master's own RDB (BGSAVE), for the floor."""
        self.wait_master_idle(ds)
        before = int(self.master.info("persistence")["rdb_saves"])
        self.master.call("BGSAVE")

        def saved():
            p = self.master.info("persistence")
            return p["rdb_bgsave_in_progress"] == "0" and int(p["rdb_saves"]) > before
        wait_until("BGSAVE", saved, self.timeout_s(ds))
        # A name of its own: native-disk's syncs write dump.rdb again.
        rdb = os.path.join(self.work, f"floor-{ds.name}.rdb")
        os.rename(os.path.join(self.master.dir, "dump.rdb"), rdb)
        os.sync()  # its dirty pages go to disk now, not during a floor sync
        return rdb

    # ---- the whole run -----------------------------------------------------

    def run(self):
        for line in report.server_lines(self.a):
            print(line, flush=True)
        print(f"pinning: {self.pinning}", flush=True)
        for name in self.a.datasets:
            ds = Dataset(name, self.a.scale)
            self.start_master(ds)
            # The floor's RDB is made once, up front, so that its syncs run
            # in turn with the others' rather than all at the end.
            rdb = self.prepared_rdb(ds) if "floor" in self.a.systems else None
            for run in range(self.a.runs):
                for system in self.a.systems:
                    if (ds.name, system) in self.refused:
                        continue  # refused once: the same pair is refused every run
                    try:
                        self.run_system(ds, system, run, rdb)
                    except Refused as e:
                        self.refused[(ds.name, system)] = str(e)
                        print(f"  {system}: REFUSED, not measured: {e}", flush=True)
            if rdb:
                os.unlink(rdb)
            self.master.stop()
            self.master = None

    def run_system(self, ds, system, run, rdb):
        if system == "floor":
            self.floor(ds, run, rdb)
            self.progress(ds, "floor", 1, run, "prepared")
        elif system.startswith("native"):
            for n in self.a.replicas:
                self.native(ds, system, n, run)
                self.progress(ds, system, n, run)
        elif system.startswith("sidecar"):
            self.sidecar(ds, system, self.a.replicas, run)  # prints its first replica
            for n in self.a.replicas:
                self.progress(ds, system, n, run, "later")

    def progress(self, ds, system, n, run, arrival="first"):
        rows = [r for r in self.rows if (r["dataset"], r["system"], r["replicas"], r["run"],
                                         r.get("arrival")) == (ds.name, system, n, run + 1,
                                                               arrival)]
        if rows:
            walls = ", ".join(f"{r['wall_s']:.2f}" for r in rows)
            what = {"later": "later, table held", "prepared": "prepared RDB"}.get(arrival,
                                                                                 arrival)
            print(f"  run {run + 1} {system:<21} {n} replica(s) ({what}): {walls} s; master CPU "
                  f"{rows[0].get('master_cpu_s', float('nan')):.2f} s", flush=True)

    def cleanup(self, ok):
        self.procs.stop_all()  # first: a server may still be writing an RDB
        if not ok:
            for d, _, files in os.walk(self.work):  # keep the logs, not GB of RDB
                for name in files:
                    if name.endswith(".rdb"):
                        os.unlink(os.path.join(d, name))
        cleanup_work(self.procs, self.work, keep=not ok)


def server_line(server, word):
    """The first complete line of rdma-server's stdout starting with `word`, or None."""
    with open(server.log, errors="replace") as f:
        for ln in f:
            if ln.endswith("\n") and ln.split(" ", 1)[0] == word:
                return ln.strip()
    return None


def refusal(log_tail):
    """The reason rdma-client gave for refusing (its last error line), or its log's tail."""
    lines = [ln.strip() for ln in log_tail.splitlines() if ln.strip()]
    errors = [ln for ln in lines if "refus" in ln.lower() or "error" in ln.lower()
              or "check target" in ln]
    return (errors or lines or ["(no message)"])[-1]


def main(argv):
    share_sidecar_secret()
    a = parse_args(argv)
    command = command_line(__file__, argv)
    bench, ok = run_harness("sync_bench", lambda: Bench(a))
    if bench is None:
        return 2
    if not bench.rows and not bench.refused:
        return 1
    stem = report.write(a, bench, command, datetime.date.today().isoformat(),
                        socket.gethostname(), [Dataset(n, a.scale) for n in a.datasets])
    print("\n" + "\n".join(report.server_lines(a)))
    for name in a.datasets:
        print(f"{name}: " + (report.targets(bench.rows, name, a.replicas) or "nothing to read off\n"),
              end="")
        for (ds, system), why in bench.refused.items():
            if ds == name:
                print(f"- refused, not measured: {system}: {why}")
    return wrote_report("sync_bench", stem, ok, plots=not a.no_plots)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
