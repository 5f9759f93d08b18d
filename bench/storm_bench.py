#!/usr/bin/env python3
"""Replication storm: N replicas needing a full copy of one master at once
(--arrival together) or one every --stagger-seconds (staggered, past the
master's repl-diskless-sync-delay, so native forks once per replica), while a
steady client load runs on the master. What the storm costs the master and its
clients, per system and replica count (--replicas 1,2,4,8):

  native-diskless     REPLICAOF; the master forks and streams its RDB
                      (repl-diskless-sync yes, --diskless-delay s to gather
                      replicas; max-replicas 0)
  native-disk         REPLICAOF; the master forks and writes an RDB to disk,
                      then sends it (replicas arriving during a save share it)
  native-rdb-channel  native diskless with the RDB on a second connection
                      (Redis 8 repl-rdb-channel, Valkey 8 dual-channel-
                      replication-enabled): the replica, not the master,
                      buffers the stream while it loads. Not available on
                      redis-7.0 (reported, not measured)
  sidecar-master      rdma-server --source psync on the master (one fork per
                      epoch), one rdma-client --mode replica --handoff per
                      replica: loads it from the table, follows the change
                      log, then REPLICAOF the master (a partial resync)
  sidecar-replica     the same with rdma-server on a standing native replica
                      of the master (synced before the storm): that replica
                      forks, the master never does

Per storm: the master's forks (INFO total_forks), CPU of its main thread, all
its threads and its fork children (/proc), copy-on-write (INFO
current_cow_size sampled; the fork children's Private_Dirty from
smaps_rollup), peak RSS and used_memory, latency of a steady open-loop
GET/SET client on the master (p50, p99, p99.9, max, coordinated omission
included: measured from each request's due time) against the same load with
no sync (the baseline), bytes the master sent to replicas, the time until every
replica is synced, each checked equal (offset and DEBUG DIGEST) afterwards,
and rdma-server's and rdma-clients' CPU and peak RSS.

--loop: the loop under writes. A write load heavy enough that a native
replica's client-output-buffer-limit replica (--obuf-limit) is exceeded during
its full sync; for --loop-seconds count the master's full syncs
(INFO sync_full) and output-buffer disconnects per system.

Writes bench/results/<date>-storm-<host>[-SERVER][-tag].{md,csv} and PNG plots
(see bench/README.md, Replication storm).
"""
import argparse
import array
import datetime
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from benchlib import (add_build_dir_arg, add_results_args, add_server_args, add_wait_quiet_arg,
                      built_binary, check_systems, children_of, choose_pinning, cleanup_work,
                      command_line, cpu_seconds, exited_unreaped, free_port, load_dataset,
                      master_idle, peak_rss_mb, percentile, pin_prefix, private_dirty_mb, reap,
                      replica_synced, reset_peak_rss, resolve_servers, run_harness,
                      share_sidecar_secret, synced_or_refused, tail, thread_cpu_seconds,
                      wait_until, wrote_report, BENCH_DIR, CLK_TCK, LOOPBACK, POLL_S, REPO_DIR,
                      BenchError, Disturbance, Procs, RedisServer, Resp)
import storm_report

SYSTEMS = ["native-diskless", "native-disk", "native-rdb-channel", "sidecar-master",
           "sidecar-replica"]
ARRIVALS = ["together", "staggered"]
REPLICA_ARGS = ["--repl-diskless-load", "swapdb"]
QUIET = 0.15    # busy fraction of the machine before a storm above which it is flagged
OTHERS = 0.10   # cores others used during a storm above which it is flagged
SAMPLE_S = 0.1  # the sampler's period: INFO and the fork children's smaps_rollup
LOAD_KEYS = 1000  # the latency client's keys, storm:lat:0..999
OBUF_KILL = re.compile(r"scheduled to be closed ASAP for overcoming of output buffer limits")


def size_arg(text):
    """`64M` -> bytes (k/M/G suffixes, as rdma-server takes)."""
    m = re.fullmatch(r"(\d+)([kKmMgG]?)[bB]?", text)
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r}: expected bytes like 64M")
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30}[m.group(2).lower()]


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--keys", type=int, default=1_000_000, help="keys in the master (default 1M)")
    p.add_argument("--value-size", type=int, default=1000, help="bytes per value (default 1000)")
    p.add_argument("--scale", type=float, default=1.0,
                   help="multiply --keys (0.01: a 10 MB smoke run)")
    p.add_argument("--systems", default=",".join(SYSTEMS),
                   help=f"comma-separated, from {', '.join(SYSTEMS)} (default: all)")
    p.add_argument("--replicas", default="1,2,4,8", help="replica counts (default 1,2,4,8)")
    p.add_argument("--arrival", choices=ARRIVALS + ["both"], default="both",
                   help="replicas arrive together, staggered, or both (default)")
    p.add_argument("--stagger-seconds", type=float, default=None, metavar="S",
                   help="seconds between staggered arrivals (default --diskless-delay + 1: "
                        "each native replica misses the previous one's fork)")
    p.add_argument("--diskless-delay", type=int, default=5,
                   help="the master's repl-diskless-sync-delay for the native systems "
                        "(default 5, Redis' own)")
    p.add_argument("--load-rate", type=int, default=1000,
                   help="requests/s of the steady latency client, half GET half SET "
                        "(default 1000)")
    p.add_argument("--baseline-seconds", type=float, default=10,
                   help="seconds of that load with no sync, once per run (default 10)")
    p.add_argument("--runs", type=int, default=1, help="repetitions (default 1)")
    p.add_argument("--settled-seconds", type=float, default=0, metavar="S",
                   help="after each storm, S s of the latency load with the synced replicas "
                        "still attached and nothing syncing (the master then propagates every "
                        "write to them): the baseline a storm's own cost is read against "
                        "(default 0: off)")
    p.add_argument("--busy-baseline", action="store_true",
                   help="also measure the latency client while gen_dataset loads as many bytes "
                        "as the largest storm's replicas take in into a scratch server beside "
                        "them (--replica-cpu): the machine's own interference, with no sync")
    p.add_argument("--log-size", type=size_arg, default=None,
                   help="rdma-server --log-size (default: 64M, or 60 s of the --loop "
                        "write stream when more)")
    p.add_argument("--backlog-size", type=size_arg, default=None,
                   help="the master's repl-backlog-size, which --handoff needs to cover "
                        "the table's offset (default: as --log-size)")
    p.add_argument("--loop", action="store_true",
                   help="also run the loop under writes (see above)")
    p.add_argument("--loop-only", action="store_true", help="only the loop under writes")
    p.add_argument("--loop-seconds", type=float, default=60,
                   help="the loop's window per system (default 60)")
    p.add_argument("--write-rate", type=int, default=20000, help="--loop SET/s (default 20000)")
    p.add_argument("--write-value-size", type=int, default=256,
                   help="--loop bytes per value (default 256)")
    p.add_argument("--obuf-limit", type=size_arg, default=None,
                   help="--loop: client-output-buffer-limit replica hard limit (soft 0) on the "
                        "master and the standing replica (default: the data set's size / 16, "
                        "at least 1M: Redis' 256mb scaled to a 4 GB master)")
    p.add_argument("--loop-backlog", type=size_arg, default=None,
                   help="--loop: the master's repl-backlog-size (default: the larger of "
                        "--obuf-limit and 2 s of the write stream, which the sidecar's handoff "
                        "needs). Since Redis 7 a replica's buffer within the backlog is never "
                        "cut, so the limit in effect is the larger of the two")
    p.add_argument("--standing-obuf-limit", type=size_arg, default=None,
                   help="--loop: the standing replica's limit for its one consumer, the "
                        "sidecar, whose snapshot is a full sync of that replica (default: "
                        "--log-size: sized once for the writes during one table build)")
    add_server_args(p)
    add_build_dir_arg(p)
    p.add_argument("--pin", action="store_true",
                   help="pin the master's main process to --master-cpu; its fork children "
                        "(bgsave-cpulist), every other server, rdma-server and rdma-client to "
                        "--replica-cpu, as on a host where the master's thread has a core "
                        "of its own; this harness too, so that its own threads stay out of "
                        "the master's latency (default: nothing pinned)")
    p.add_argument("--master-cpu", type=int, default=0)
    p.add_argument("--replica-cpu", type=int, default=1)
    add_wait_quiet_arg(p, "storm", QUIET)
    add_results_args(p)
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--keep-logs", action="store_true",
                   help="keep every server's and tool's log (printed: where) after a good run")
    a = p.parse_args(argv)
    check_args(p, a)
    return a


def check_args(p, a):
    try:
        a.replicas = sorted({int(x) for x in a.replicas.split(",")})
    except ValueError:
        p.error("--replicas expects counts like 1,2,4,8")
    a.systems = a.systems.split(",")
    check_systems(p, a.systems, SYSTEMS)
    if min(a.replicas) < 1 or a.runs < 1 or a.scale <= 0 or a.load_rate < 1:
        p.error("--replicas, --runs, --scale and --load-rate must be positive")
    a.arrivals = ARRIVALS if a.arrival == "both" else [a.arrival]
    if a.stagger_seconds is None:
        a.stagger_seconds = a.diskless_delay + 1.0
    a.keys = max(1, int(a.keys * a.scale))
    a.data_bytes = a.keys * a.value_size
    a.loop = a.loop or a.loop_only
    write_bps = a.write_rate * (a.write_value_size + 40)  # + the command's framing
    if a.log_size is None:
        a.log_size = max(64 << 20, write_bps * 60 if a.loop else 0)
    if a.backlog_size is None:
        a.backlog_size = a.log_size
    if a.obuf_limit is None:
        a.obuf_limit = max(1 << 20, a.data_bytes // 16)
    if a.loop_backlog is None:
        a.loop_backlog = max(a.obuf_limit, 2 * write_bps)
    if a.standing_obuf_limit is None:
        a.standing_obuf_limit = a.log_size
    a.no_pin = not a.pin
    resolve_servers(p, a)


# ---- the latency client (a child process: `storm_bench.py _latency ...`) --------------

def latency_main(argv):
    """Open loop: request i is due at t0 + i / rate, GET and SET in turn on
    LOAD_KEYS keys; each latency is from the due time to the reply, so a stall
    counts for every request it delayed. Runs until SIGTERM, then writes the due
    times and latencies (ns) to --out and prints a summary line. bench/paced_load
    (C++) does the same with less overhead of its own; this stands in for it."""
    p = argparse.ArgumentParser(prog="storm_bench.py _latency")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--rate", type=int, required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args(argv)
    stop = []
    signal.signal(signal.SIGTERM, lambda _s, _f: stop.append(1))
    import gc
    gc.disable()
    conn = Resp(a.port)
    value = b"v" * 100
    due_ns, lat_ns = array.array("q"), array.array("q")
    interval = 1e9 / a.rate
    t0 = time.monotonic_ns()
    i = 0
    while not stop:
        due = t0 + int(i * interval)
        now = time.monotonic_ns()
        if now < due:
            time.sleep((due - now) / 1e9)
        key = b"storm:lat:%d" % (i % LOAD_KEYS)
        if i % 2:
            conn.call(b"SET", key, value)
        else:
            conn.call(b"GET", key)
        due_ns.append(due)
        lat_ns.append(time.monotonic_ns() - due)
        i += 1
    with open(a.out, "wb") as f:
        array.array("q", [len(due_ns)]).tofile(f)
        due_ns.tofile(f)
        lat_ns.tofile(f)
    print(f"latency requests={i}", flush=True)
    return 0


def read_latencies(path, t0_ns, t1_ns):
    """The latencies (ns, ascending) of the requests due in [t0_ns, t1_ns]."""
    with open(path, "rb") as f:
        n = array.array("q")
        n.fromfile(f, 1)
        due, lat = array.array("q"), array.array("q")
        due.fromfile(f, n[0])
        lat.fromfile(f, n[0])
    return sorted(x for d, x in zip(due, lat) if t0_ns <= d <= t1_ns)


def latency_figures(lats):
    """{p50_us, p99_us, p999_us, max_us, requests} of sorted ns latencies."""
    def us(q):
        x = percentile(lats, q)
        return None if x is None else x / 1000
    return {"p50_us": us(0.50), "p99_us": us(0.99), "p999_us": us(0.999),
            "max_us": lats[-1] / 1000 if lats else None, "requests": len(lats)}


# ---- what the master does while a storm runs -------------------------------------------

class Sampler(threading.Thread):
    """Every SAMPLE_S: the master's INFO current_cow_size, current_fork_perc and
    used_memory, and each fork child's Private_Dirty (its copy-on-write). Runs
    in the baseline too, so both see the same INFO traffic."""

    def __init__(self, server):
        super().__init__(daemon=True)
        self.pid, self.conn = server.proc.pid, Resp(server.port)
        self.halt = threading.Event()
        self.cow_info = self.fork_perc = self.used_memory = 0
        self.child_dirty = {}  # fork child pid -> its largest Private_Dirty, MiB

    def run(self):
        while not self.halt.is_set():
            try:
                p, m = self.conn.info("persistence"), self.conn.info("memory")
            except (OSError, BenchError):
                return  # the master went away: the storm itself reports why
            self.cow_info = max(self.cow_info, int(p.get("current_cow_size", 0)))
            self.fork_perc = max(self.fork_perc, float(p.get("current_fork_perc", 0)))
            self.used_memory = max(self.used_memory, int(m["used_memory"]))
            for kid in children_of(self.pid):
                mb = private_dirty_mb(kid)
                if mb is not None:
                    self.child_dirty[kid] = max(self.child_dirty.get(kid, 0), mb)
            self.halt.wait(SAMPLE_S)

    def finish(self):
        self.halt.set()
        self.join()
        try:
            self.conn.close()
        except OSError:
            pass
        dirty = list(self.child_dirty.values())
        return {"cow_info_max_mb": self.cow_info / 2**20, "fork_perc_max": self.fork_perc,
                "used_memory_max_mb": self.used_memory / 2**20,
                "cow_dirty_max_mb": max(dirty, default=0.0),
                "cow_dirty_sum_mb": sum(dirty), "children_seen": len(dirty)}


def master_counters(master):
    """The master's cumulative counters a storm is measured by (deltas)."""
    pid = master.proc.pid
    st = master.info("stats")
    with open(f"/proc/{pid}/stat") as f:
        ticks = [int(x) for x in f.read().rsplit(")", 1)[1].split()[11:15]]
    return {"forks": int(st["total_forks"]), "main_cpu_s": thread_cpu_seconds(pid),
            "threads_cpu_s": (ticks[0] + ticks[1]) / CLK_TCK,
            "children_cpu_s": (ticks[2] + ticks[3]) / CLK_TCK,
            "repl_out_mb": int(st.get("total_net_repl_output_bytes", 0)) / 1e6,
            # Every connection's, replication included (Redis 7.0, Valkey 8, 9); not
            # the RDB channel (Redis 8.0, Valkey), which the fork child writes.
            "bytes_out_mb": int(st["total_net_output_bytes"]) / 1e6,
            "sync_full": int(st["sync_full"]), "sync_partial_ok": int(st["sync_partial_ok"])}


def bytes_in_mb(server):
    """What a server read from the network, replication included (INFO stats):
    a fresh replica's is what its master (or rdma-client) sent it, counted
    where the master's own counters cannot see a fork child's writes."""
    st = server.info("stats")
    return int(st["total_net_input_bytes"]) / 1e6


def counters_delta(before, after):
    return {("master_" + k if not k.startswith("sync") else k): after[k] - before[k]
            for k in before}


# ---- the harness -------------------------------------------------------------------------

class Storm:
    def __init__(self, a):
        self.a = a
        for rel in ("bench/gen_dataset", "server/rdma-server", "client/rdma-client"):
            self.binary(rel)  # fail before minutes of work, not after
        self.pinning = choose_pinning(a, (
            f"master, the latency client and the --loop writer: CPU {a.master_cpu}; the "
            f"master's fork children (bgsave-cpulist), every replica, the standing replica, "
            f"rdma-server, rdma-client and gen_dataset: CPU {a.replica_cpu}. As on a host "
            f"where a fork child gets a core of its own, the master's thread keeps one; "
            f"this harness (its INFO sampler and pollers) on CPU {a.replica_cpu} too"))
        if a.replica_cpu is not None:
            # Off the master's CPU: its Python threads woke there while replicas
            # arrived and were counted in the master's client latency (pinned
            # processes below set their own CPU).
            os.sched_setaffinity(0, {a.replica_cpu})
        self.procs = Procs()
        self.work = tempfile.mkdtemp(prefix="storm_bench.")
        self.quiet = Disturbance(a.wait_quiet, QUIET, OTHERS)
        self.rows, self.baselines, self.busy_baselines, self.loops = [], [], [], []
        self.unsupported = {}  # system -> why it was not measured
        self.loadavg_start = storm_report.loadavg()
        self.master = None
        self.load_s = self.used_memory_mb = self.dataset_mb = None
        self.memory_check()
        paced = os.path.join(a.build_dir, "bench", "paced_load")
        # The C++ client keeps its own overhead out of the tail; Python's stands in.
        self.latency_client = paced if os.access(paced, os.X_OK) else None

    def memory_check(self):
        """Warns when the run may not fit: the master, N replicas, the standing
        replica and the sidecar's table each hold the data (about 1.15x it)."""
        need = (max(self.a.replicas) + 3) * self.a.data_bytes * 1.15
        with open("/proc/meminfo") as f:
            avail = next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith("MemAvailable"))
        if need > avail:
            print(f"warning: this run needs about {need / 2**30:.1f} GiB, "
                  f"{avail / 2**30:.1f} GiB are available: lower --scale", flush=True)

    def binary(self, rel):
        return built_binary(self.a.build_dir, rel,
                            f"build it: cmake -S {REPO_DIR} -B {self.a.build_dir} -G Ninja && "
                            f"cmake --build {self.a.build_dir}")

    def cpu(self, role):
        return self.a.master_cpu if role == "master" else self.a.replica_cpu

    def timeout_s(self, n=1):
        return 120 + n * self.a.data_bytes / 2e6  # generous: 2 MB/s is below any path

    # ---- servers -------------------------------------------------------------

    def start_master(self, run):
        a = self.a
        args = ["--repl-backlog-size", str(a.backlog_size)]
        if a.master_cpu is not None:  # its fork children run beside the replicas
            args += ["--bgsave-cpulist", str(a.replica_cpu)]
        self.master = RedisServer(self.procs, f"master{run}", self.work, self.cpu("master"),
                                  args, a.server).start()
        print(f"loading the master (port {self.master.port}): {a.keys:,} keys x "
              f"{a.value_size} B ...", flush=True)
        self.load_s, _ = load_dataset(self.procs, self.binary("bench/gen_dataset"),
                                      self.master.port, a.keys, a.value_size,
                                      cpu=self.cpu("other"), timeout_s=self.timeout_s())
        memory = self.master.info("memory")
        self.used_memory_mb = int(memory["used_memory"]) / 2**20
        self.dataset_mb = int(memory["used_memory_dataset"]) / 2**20
        print(f"  loaded in {self.load_s:.1f} s; used_memory {self.used_memory_mb:.0f} MiB",
              flush=True)

    def rdb_channel_config(self):
        """(name, why-not) of the server's RDB-channel setting."""
        name = ("dual-channel-replication-enabled" if self.a.server.engine == "valkey"
                else "repl-rdb-channel")
        if not self.master.call("CONFIG", "GET", name):
            return name, (f"{self.a.server.describe()} has no `{name}` (Redis 8.0+ "
                          "repl-rdb-channel, Valkey 8.0+ dual-channel-replication-enabled)")
        return name, None

    def configure(self, system):
        """The master's replication settings for `system`; the replicas' extra args."""
        m, a = self.master, self.a
        native = system.startswith("native")
        m.call("CONFIG", "SET", "repl-diskless-sync", "no" if system == "native-disk" else "yes")
        # The sidecar's psync should not wait for more replicas: none will come.
        m.call("CONFIG", "SET", "repl-diskless-sync-delay",
               str(a.diskless_delay if native else 0))
        m.call("CONFIG", "SET", "repl-diskless-sync-max-replicas", "0")
        name, why = self.rdb_channel_config()
        on = system == "native-rdb-channel"
        if why is None:
            m.call("CONFIG", "SET", name, "yes" if on else "no")
        return REPLICA_ARGS + ([f"--{name}", "yes"] if on else [])

    def start_replicas(self, n, tag, args):
        return [RedisServer(self.procs, f"{tag}-r{i}", self.work, self.cpu("other"), args,
                            self.a.server).start() for i in range(n)]

    def standing_replica(self, tag, extra=()):
        """A native replica of the master, synced before anything is measured:
        the one an operator already runs, which sidecar-replica snapshots."""
        r = RedisServer(self.procs, f"{tag}-standing", self.work, self.cpu("other"),
                        REPLICA_ARGS + ["--repl-diskless-sync", "yes",
                                        "--repl-diskless-sync-delay", "0"] + list(extra),
                        self.a.server).start()
        r.call("REPLICAOF", LOOPBACK, self.master.port)
        wait_until("the standing replica's sync", lambda: replica_synced(r), self.timeout_s())
        self.wait_master_idle(replicas_allowed=1)
        return r

    def wait_master_idle(self, replicas_allowed=0):
        wait_until("the master to be idle (no fork child, no replica left)",
                   lambda: master_idle(self.master, replicas_allowed), self.timeout_s())

    def start_sidecar(self, tag, source):
        """rdma-server --source psync on `source`, not waited for: the clients
        retry until its table is published."""
        port = free_port()
        out = os.path.join(self.work, f"{tag}-rdma-server.log")
        argv = pin_prefix(self.cpu("other")) + [
            self.binary("server/rdma-server"), "--snapshot-at-start",
            "--redis", f"{LOOPBACK}:{source.port}",
            "--listen", LOOPBACK, "--port", str(port), "--source", "psync",
            "--transport", "tcp", "--log-size", str(self.a.log_size)]
        with open(out, "w") as o, open(out + ".stderr", "w") as e:
            proc = self.procs.start("rdma-server", argv, stdout=o, stderr=e)
        return {"proc": proc, "port": port, "log": out}

    def start_client(self, tag, sidecar, replica):
        """rdma-client --mode replica --handoff: loads `replica` from the table,
        follows the change log, then points it at the master."""
        log = os.path.join(self.work, f"{tag}-rdma-client.log")
        argv = [self.binary("client/rdma-client"), LOOPBACK, str(sidecar["port"]),
                "--redis", f"{LOOPBACK}:{replica.port}", "--transport", "tcp",
                "--mode", "replica", "--handoff", "--master", f"{LOOPBACK}:{self.master.port}",
                "--connect-timeout", str(int(self.timeout_s())), "--quiet"]
        if self.cpu("other") is not None:
            argv += ["--cpu", str(self.cpu("other"))]
        with open(log + ".out", "w") as out, open(log, "w") as err:
            proc = self.procs.start("rdma-client", argv, stdout=out, stderr=err)
        return {"proc": proc, "log": log, "cpu_s": None, "rss_mb": None}

    def client_done(self, c):
        """True once rdma-client exited 0 having handed off with a partial resync."""
        if c["cpu_s"] is None:
            if not exited_unreaped(c["proc"]):
                return False
            c["cpu_s"], c["rss_mb"] = reap(c["proc"])
        with open(c["log"] + ".out") as f:
            out = f.read()
        if c["proc"].returncode != 0 or "partial_resync=yes" not in out:
            raise BenchError(f"rdma-client exited {c['proc'].returncode} without a partial "
                             f"handoff:\n{out}{tail(c['log'])}")
        return True

    # ---- the latency client ----------------------------------------------------

    def start_latency(self, tag):
        out = os.path.join(self.work, f"{tag}-latency.bin")
        client = ([self.latency_client] if self.latency_client else
                  [sys.executable, os.path.abspath(__file__), "_latency"])
        argv = pin_prefix(self.cpu("master")) + client + [
            "--port", str(self.master.port), "--rate", str(self.a.load_rate), "--out", out]
        with open(out + ".log", "w") as log:
            proc = self.procs.start("latency", argv, stdout=log, stderr=subprocess.STDOUT)
        time.sleep(0.5)  # connected and paced before anything is measured
        if proc.poll() is not None:
            raise BenchError(f"the latency client exited:\n{tail(out + '.log')}")
        return proc, out

    def stop_latency(self, lat, t0, t1):
        proc, out = lat
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        self.procs.stop(proc)
        if proc.returncode != 0:
            raise BenchError(f"the latency client failed:\n{tail(out + '.log')}")
        return latency_figures(read_latencies(out, int(t0 * 1e9), int(t1 * 1e9)))

    def baseline(self, run):
        """The latency client alone, with the sampler running as in a storm."""
        self.wait_master_idle()
        lat = self.start_latency(f"baseline{run}")
        sampler = Sampler(self.master)
        sampler.start()
        before = master_counters(self.master)
        t0 = time.monotonic()
        time.sleep(self.a.baseline_seconds)
        t1 = time.monotonic()
        # What serving the steady load alone costs the master's main thread:
        # storms' CPU is also reported net of it (their durations differ).
        cpu = master_counters(self.master)["main_cpu_s"] - before["main_cpu_s"]
        sampler.finish()
        row = {"run": run + 1, "seconds": t1 - t0, "master_main_cpu_s": cpu,
               **self.stop_latency(lat, t0, t1)}
        self.baselines.append(row)
        print(f"  baseline, no sync: p50 {row['p50_us']:.0f} us, p99 {row['p99_us']:.0f} us, "
              f"p99.9 {row['p999_us']:.0f} us, max {row['max_us']:.0f} us "
              f"({row['requests']:,} requests)", flush=True)

    def busy_baseline(self, run):
        """The latency client while the replicas' side of the machine loads the
        bytes of the largest storm into a scratch server: what the master's
        clients see from that work alone, no sync involved."""
        a = self.a
        n = max(a.replicas)
        scratch = RedisServer(self.procs, f"scratch{run}", self.work, self.cpu("other"), (),
                              a.server).start()
        self.wait_master_idle()
        lat = self.start_latency(f"busy-baseline{run}")
        t0 = time.monotonic()
        load_dataset(self.procs, self.binary("bench/gen_dataset"), scratch.port, a.keys * n,
                     a.value_size, cpu=self.cpu("other"), timeout_s=self.timeout_s(n))
        t1 = time.monotonic()
        row = {"run": run + 1, "seconds": t1 - t0, "busy": n, **self.stop_latency(lat, t0, t1)}
        scratch.stop()
        self.busy_baselines.append(row)
        print(f"  baseline, the other CPU loading {n} x the data set into a scratch server: "
              f"p50 {row['p50_us']:.0f} us, p99 {row['p99_us']:.0f} us, p99.9 "
              f"{row['p999_us']:.0f} us, max {row['max_us']:.0f} us ({t1 - t0:.1f} s)",
              flush=True)

    # ---- one storm -------------------------------------------------------------

    def storm(self, system, n, arrival, run):
        tag = f"{system}-{arrival}-{n}-{run}"
        args = self.configure(system)
        standing = self.standing_replica(tag) if system == "sidecar-replica" else None
        replicas = self.start_replicas(n, tag, args)
        self.wait_master_idle(replicas_allowed=1 if standing else 0)
        lat = self.start_latency(tag)
        busy = self.quiet.before("storm")
        before = master_counters(self.master)
        sforks0 = int(standing.info("stats")["total_forks"]) if standing else 0
        reset_peak_rss(self.master.proc.pid)
        sampler = Sampler(self.master)
        sampler.start()
        t0 = time.monotonic()
        sidecar, clients, arrive, synced = self.arrival(system, tag, replicas, standing)
        done = self.drive(n, arrival, t0, arrive, synced)
        t1 = max(done)
        received = sum(bytes_in_mb(r) for r in replicas)
        cost = sampler.finish()
        latency = self.stop_latency(lat, t0, t1)
        # A fork child's CPU is in its master's account once it is reaped.
        wait_until("the master's fork child to be reaped", lambda: self.master.info(
            "persistence")["rdb_bgsave_in_progress"] == "0", self.timeout_s())
        row = {"system": system, "arrival": arrival, "replicas": n, "run": run + 1,
               "synced_s": t1 - t0, "first_synced_s": min(done) - t0, "busy_before": busy,
               "replicas_in_mb": received,
               "others_cores": self.quiet.during("storm"), **latency, **cost,
               **counters_delta(before, master_counters(self.master)),
               "master_peak_rss_mb": peak_rss_mb(self.master.proc.pid),
               "fork_usec": int(self.master.info("stats")["latest_fork_usec"]),
               "standing_forks": (int(standing.info("stats")["total_forks"]) - sforks0
                                  if standing else None)}
        row.update(self.sidecar_cost(sidecar, clients))
        row["equal"] = self.verify(replicas, tag)
        if self.a.settled_seconds > 0:
            row.update(self.settled(tag, standing, sidecar))
        self.teardown(replicas, standing, sidecar)
        self.rows.append(row)
        self.progress(row)

    def arrival(self, system, tag, replicas, standing):
        """(sidecar, rdma-clients, arrive(i), synced(i)) for `system`: a sidecar
        starts at once, and replica i arrives through its own rdma-client; a
        native replica arrives by REPLICAOF."""
        if not system.startswith("sidecar"):
            def arrive(i):
                replicas[i].call("REPLICAOF", LOOPBACK, self.master.port)

            def synced(i):
                return synced_or_refused(replicas[i])
            return None, [], arrive, synced
        sidecar = self.start_sidecar(tag, standing or self.master)
        clients = [None] * len(replicas)

        def arrive(i):
            clients[i] = self.start_client(f"{tag}-{i}", sidecar, replicas[i])

        def synced(i):
            return self.client_done(clients[i]) and replica_synced(replicas[i])
        return sidecar, clients, arrive, synced

    def drive(self, n, arrival, t0, arrive, synced):
        """Starts replica i at its arrival time and polls until all are synced;
        returns when each was seen synced (CLOCK_MONOTONIC)."""
        step = self.a.stagger_seconds if arrival == "staggered" else 0.0
        arrived, done = [False] * n, [None] * n
        deadline = t0 + step * n + self.timeout_s(n)
        while None in done:
            now = time.monotonic()
            for i in range(n):
                if not arrived[i] and now >= t0 + i * step:
                    arrive(i)
                    arrived[i] = True
                if arrived[i] and done[i] is None and synced(i):
                    done[i] = time.monotonic()
            if now > deadline:
                raise BenchError(f"timed out: {done.count(None)} of {n} replicas not synced")
            time.sleep(POLL_S)
        return done

    def tables(self, sidecar):
        """The `ready` and `published` lines rdma-server printed: its tables."""
        if not sidecar:
            return None
        with open(sidecar["log"], errors="replace") as f:
            return [ln for ln in f if ln.startswith(("ready", "published"))]

    def sidecar_cost(self, sidecar, clients):
        if not sidecar:
            return {}
        pid = sidecar["proc"].pid
        ready = self.tables(sidecar)
        build = re.search(r"build_s=([\d.]+)", ready[0]) if ready else None
        size = re.search(r" bytes=(\d+)", ready[0]) if ready else None
        return {"sidecar_tables": len(ready),"sidecar_cpu_s": cpu_seconds(pid, children=False),
                "sidecar_rss_mb": peak_rss_mb(pid),
                "clients_cpu_s": sum(c["cpu_s"] for c in clients),
                "client_rss_mb": max(c["rss_mb"] for c in clients),
                "build_s": float(build.group(1)) if build else None,
                "table_mb": int(size.group(1)) / 2**20 if size else None}

    def verify(self, replicas, tag):
        """Every replica at the master's offset, with its DEBUG DIGEST."""
        def caught_up():
            at = int(self.master.info("replication")["master_repl_offset"])
            return all(int(r.info("replication")["master_repl_offset"]) >= at for r in replicas)
        wait_until(f"{tag}: replicas at the master's offset", caught_up, 60)
        want = self.master.call("DEBUG", "DIGEST")
        bad = [r.name for r in replicas if r.call("DEBUG", "DIGEST") != want]
        if bad:
            raise BenchError(f"{tag}: DEBUG DIGEST differs from the master's on {bad}")
        return "yes"

    def settled(self, tag, standing, sidecar):
        """The latency load once the storm is over: its replicas (and the
        standing one) attached and streaming, the sidecar stopped."""
        if sidecar:
            self.procs.stop(sidecar["proc"])
        lat = self.start_latency(f"{tag}-settled")
        t0 = time.monotonic()
        time.sleep(self.a.settled_seconds)
        t1 = time.monotonic()
        figures = self.stop_latency(lat, t0, t1)
        return {f"settled_{k}": v for k, v in figures.items() if k.endswith("_us")}

    def teardown(self, replicas, standing, sidecar):
        if sidecar:
            self.procs.stop(sidecar["proc"])
        for r in replicas + ([standing] if standing else []):
            r.stop()
        self.wait_master_idle()

    def progress(self, r):
        print(f"  run {r['run']} {r['system']:<18} {r['arrival']:<9} {r['replicas']} "
              f"replica(s): synced in {r['synced_s']:.2f} s, master forks "
              f"{r['master_forks']}, p99 {r['p99_us']:.0f} us, max {r['max_us']:.0f} us, "
              f"bytes out {r['master_bytes_out_mb']:.1f} MB", flush=True)

    # ---- the loop under writes -------------------------------------------------

    def loop(self, system, run):
        a = self.a
        tag = f"loop-{system}-{run}"
        args = self.configure(system)
        self.master.call("CONFIG", "SET", "client-output-buffer-limit",
                         f"replica {a.obuf_limit} 0 0")
        self.master.call("CONFIG", "SET", "repl-backlog-size", str(a.loop_backlog))
        extra = ["--client-output-buffer-limit", f"replica {a.standing_obuf_limit} 0 0"]
        standing = self.standing_replica(tag, extra) if system == "sidecar-replica" else None
        sfull0 = int(standing.info("stats")["sync_full"]) if standing else 0
        replica = self.start_replicas(1, tag, args)[0]
        writer = self.start_writer(tag, a.loop_seconds + 30)
        time.sleep(1.0)  # the stream flowing before the replica arrives
        before = master_counters(self.master)
        log0 = os.path.getsize(self.master.log)
        t0 = time.monotonic()
        sidecar = client = None
        if system.startswith("sidecar"):
            sidecar = self.start_sidecar(tag, standing or self.master)
            client = self.start_client(tag, sidecar, replica)
        else:
            replica.call("REPLICAOF", LOOPBACK, self.master.port)
        first, failed = None, None
        while time.monotonic() - t0 < a.loop_seconds:
            try:
                if first is None and (client is None or self.client_done(client)) \
                        and replica_synced(replica):
                    first = time.monotonic() - t0
            except BenchError as e:  # a handoff refused is this loop's result, not the run's
                failed = str(e).splitlines()[-1]
                break
            time.sleep(POLL_S * 10)
        synced_end = not failed and replica_synced(replica) and first is not None
        after = master_counters(self.master)
        self.procs.stop(writer)
        with open(self.master.log, errors="replace") as f:
            f.seek(log0)
            kills = len(OBUF_KILL.findall(f.read()))
        row = {"system": system, "run": run + 1, "seconds": a.loop_seconds,
               "sync_full": after["sync_full"] - before["sync_full"],
               "sync_partial_ok": after["sync_partial_ok"] - before["sync_partial_ok"],
               "master_forks": after["forks"] - before["forks"], "obuf_disconnects": kills,
               "first_synced_s": first, "synced_at_end": "yes" if synced_end else "no",
               "bytes_out_mb": after["bytes_out_mb"] - before["bytes_out_mb"],
               "standing_sync_full": (int(standing.info("stats")["sync_full"]) - sfull0
                                      if standing else None),
               "sidecar_tables": len(self.tables(sidecar)) if sidecar else None,
               "failed": failed}
        self.teardown([replica], standing, sidecar)
        self.master.call("CONFIG", "SET", "client-output-buffer-limit",
                         "replica 268435456 67108864 60")  # Redis' default again
        self.master.call("CONFIG", "SET", "repl-backlog-size", str(a.backlog_size))
        self.loops.append(row)
        print(f"  loop {system}: {row['sync_full']} full sync(s), {kills} output-buffer "
              f"disconnect(s), first synced at {first if first is None else round(first, 2)} "
              f"s, synced at the end: {row['synced_at_end']}", flush=True)

    def start_writer(self, tag, seconds):
        """lag_bench's open-loop writer: --write-rate SETs/s in 1 ms batches."""
        a = self.a
        batch = max(1, a.write_rate // 1000)
        interval_ns = batch * 1e9 / a.write_rate
        argv = pin_prefix(self.cpu("master")) + [
            sys.executable, os.path.join(BENCH_DIR, "lag_bench.py"), "_writer",
            "--port", str(self.master.port), "--batch", str(batch),
            "--batches", str(int(seconds * 1e9 / interval_ns)),
            "--value-size", str(a.write_value_size), "--keyspace", "100000",
            "--t0-ns", str(time.monotonic_ns() + 200_000_000),
            "--interval-ns", str(interval_ns), "--end-token", "end",
            "--out", os.path.join(self.work, f"{tag}-writer.bin")]
        with open(os.path.join(self.work, f"{tag}-writer.log"), "w") as log:
            return self.procs.start("writer", argv, stdout=log, stderr=subprocess.STDOUT)

    # ---- the whole run ---------------------------------------------------------

    def run(self):
        a = self.a
        print(f"server: {a.server.describe()} {a.server.binary}\npinning: {self.pinning}",
              flush=True)
        for run in range(a.runs):
            self.start_master(run)
            for system in a.systems:
                if system == "native-rdb-channel" and self.rdb_channel_config()[1]:
                    self.unsupported[system] = self.rdb_channel_config()[1]
            systems = [s for s in a.systems if s not in self.unsupported]
            if not a.loop_only:
                self.baseline(run)
                if a.busy_baseline:
                    self.busy_baseline(run)
                for arrival in a.arrivals:
                    for system in systems:
                        for n in a.replicas:
                            self.storm(system, n, arrival, run)
            if a.loop:
                for system in systems:
                    self.loop(system, run)
            self.master.stop()
            self.master = None
        for system, why in self.unsupported.items():
            print(f"  {system}: not measured: {why}", flush=True)

    def cleanup(self, ok):
        cleanup_work(self.procs, self.work, keep=not ok or self.a.keep_logs)


def main(argv):
    share_sidecar_secret()
    if argv and argv[0] == "_latency":
        return latency_main(argv[1:])
    a = parse_args(argv)
    command = command_line(__file__, argv)
    bench, ok = run_harness("storm_bench", lambda: Storm(a))
    if bench is None:
        return 2
    if not bench.rows and not bench.loops:
        return 1
    stem = storm_report.write(a, bench, command, datetime.date.today().isoformat(),
                              socket.gethostname())
    return wrote_report("storm_bench", stem, ok, plots=not a.no_plots)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
