#!/usr/bin/env python3
"""Full-sync benchmark: native Redis replication vs the sidecar over TCP.

On loopback, for one data set of --keys x --value-size random bytes:
  bgsave       the master's own BGSAVE (fork + RDB to disk), for reference;
  native       a fresh replica's diskless full sync (REPLICAOF -> link up);
  server_ready rdma-server start -> its `ready` line (snapshot built);
  client       rdma-client loading a fresh empty Redis from the sidecar.
Each is repeated --runs times; median, min and max are reported. Every wall
time is time.monotonic() (CLOCK_MONOTONIC), never CPU time. See bench/README.md.
"""
import argparse
import atexit
import csv
import datetime
import os
import platform
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from benchlib import (LOOPBACK, BenchError, Procs, RedisServer, cpu_busy, free_port,
                      pin_prefix, tail, wait_until)

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_DIR = os.path.dirname(BENCH_DIR)

MASTER_ARGS = ["--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"]
REPLICA_ARGS = ["--repl-diskless-load", "swapdb"]
QUIET = 0.15  # CPU busy fraction above which a measurement is flagged as disturbed

# What each measurement means, in the order reported.
MEASUREMENTS = [
    ("load", "gen_dataset loading the master (once)"),
    ("bgsave", "master BGSAVE: command sent -> rdb_bgsave_in_progress:0, status ok"),
    ("native_sync", "native diskless full sync: REPLICAOF -> link up, sync_in_progress:0"),
    ("server_ready", "rdma-server spawn -> `ready` line (wall, harness clock)"),
    ("server_build_s", "rdma-server's own build_s from its `ready` line"),
    ("client_wall", "rdma-client process wall time (spawn -> exit)"),
    ("client_seconds", "rdma-client's own seconds= from its `synced` line"),
]


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--keys", type=int, default=1000000)
    p.add_argument("--value-size", type=int, default=1000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--build-dir", default="build",
                   help="CMake build tree, relative to the repo root unless absolute")
    p.add_argument("--skip-native", action="store_true", help="skip BGSAVE and native sync")
    p.add_argument("--skip-sidecar", action="store_true", help="skip rdma-server/rdma-client")
    p.add_argument("--keep", action="store_true",
                   help="after a successful run, leave the master and the last run's "
                        "servers running for inspection")
    p.add_argument("--master-cpu", type=int, default=0)
    p.add_argument("--replica-cpu", type=int, default=1)
    p.add_argument("--server-cpu", type=int, default=None, help="pin rdma-server (default: no)")
    p.add_argument("--client-cpu", type=int, default=None, help="pin rdma-client (default: no)")
    p.add_argument("--no-pin", action="store_true", help="pin nothing")
    p.add_argument("--wait-quiet", type=float, default=0, metavar="S",
                   help="before each measurement wait up to S seconds for the machine "
                        f"to be under {QUIET * 100:.0f}%% busy (default: just record how busy)")
    p.add_argument("--rdbcompression", choices=("yes", "no"), default="yes",
                   help="the master's rdbcompression (Redis' default: yes). Random values "
                        "do not compress, so 'yes' only spends CPU on LZF attempts: it about "
                        "doubles BGSAVE, native sync and SCAN+DUMP here")
    p.add_argument("--results-dir", default=os.path.join(BENCH_DIR, "results"))
    a = p.parse_args(argv)
    if a.keys < 1 or a.value_size < 1 or a.runs < 1:
        p.error("--keys, --value-size and --runs must be >= 1")
    if not os.path.isabs(a.build_dir):
        a.build_dir = os.path.join(REPO_DIR, a.build_dir)
    return a


class Bench:
    def __init__(self, args):
        self.a = args
        self.binary("bench/gen_dataset")  # fail before minutes of work, not after
        if not args.skip_sidecar:
            self.binary("server/rdma-server")
            self.binary("client/rdma-client")
        self._pinning()
        self.procs = Procs()
        self.work = tempfile.mkdtemp(prefix="sync_bench.")
        self.samples = {name: [] for name, _ in MEASUREMENTS}  # name -> [(seconds, detail)]
        self.master = None
        self.master_digest = None
        self.master_dbsize = None
        self.kept = []  # servers left running by --keep
        self.disturbed = 0  # measurements that started on a busy machine
        self.loadavg_start = loadavg()
        payload = args.keys * args.value_size
        self.timeout_s = 120 + payload / 5e6  # generous: 5 MB/s is far below any path here

    # ---- setup -------------------------------------------------------------

    def _pinning(self):
        a = self.a
        cpus = sorted(os.sched_getaffinity(0))
        if a.no_pin or not shutil.which("taskset") or len(cpus) < 2:
            why = ("--no-pin" if a.no_pin else "no taskset" if not shutil.which("taskset")
                   else "fewer than 2 CPUs")
            a.master_cpu = a.replica_cpu = a.server_cpu = a.client_cpu = None
            self.pinning = f"nothing pinned ({why})"
            return
        for flag in ("master_cpu", "replica_cpu", "server_cpu", "client_cpu"):
            cpu = getattr(a, flag)
            if cpu is not None and cpu not in cpus:
                raise BenchError(f"--{flag.replace('_', '-')} {cpu}: allowed CPUs are {cpus}")

        def show(cpu):
            return "unpinned" if cpu is None else f"CPU {cpu}"
        self.pinning = (
            f"master redis-server: {show(a.master_cpu)} (its fork children inherit it); "
            f"replica / target redis-server: {show(a.replica_cpu)}; "
            f"gen_dataset: {show(a.replica_cpu)}; "
            f"rdma-server: {show(a.server_cpu)}; rdma-client: {show(a.client_cpu)}. "
            "Master and replica get one core each so neither Redis (single-threaded) "
            "competes with the other; with 2 cores there is no spare core for the "
            "sidecar and client, so by default they float and the scheduler puts them "
            "on whichever core is idle at that moment.")

    def binary(self, rel):
        path = os.path.join(self.a.build_dir, rel)
        if not os.access(path, os.X_OK):
            raise BenchError(f"{path} not found: build it with\n"
                             f"  cmake -S {REPO_DIR} -B {self.a.build_dir} -G Ninja && "
                             f"cmake --build {self.a.build_dir}")
        return path

    def master_args(self):
        return MASTER_ARGS + ["--rdbcompression", self.a.rdbcompression]

    def start_master(self):
        self.master = RedisServer(self.procs, "master", self.work, self.a.master_cpu,
                                  self.master_args()).start()
        gen = self.binary("bench/gen_dataset")
        argv = pin_prefix(self.a.replica_cpu) + [
            gen, "--redis", f"{LOOPBACK}:{self.master.port}",
            "--keys", str(self.a.keys), "--value-size", str(self.a.value_size)]
        print(f"loading {self.a.keys} keys x {self.a.value_size} B into the master "
              f"(port {self.master.port}) ...", flush=True)
        t0 = time.monotonic()
        p = self.procs.start("gen_dataset", argv, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        out, _ = p.communicate(timeout=self.timeout_s)
        wall = time.monotonic() - t0
        self.procs.stop(p)
        if p.returncode != 0:
            raise BenchError(f"gen_dataset failed ({p.returncode}): {out.strip()}")
        self.samples["load"].append((wall, out.strip()))
        self.master_dbsize = self.master.call("DBSIZE")
        if self.master_dbsize != self.a.keys:
            raise BenchError(f"master has {self.master_dbsize} keys, expected {self.a.keys}")
        t0 = time.monotonic()
        self.master_digest = self.master.call("DEBUG", "DIGEST")
        mem = self.master.info("memory")["used_memory_human"]
        print(f"  loaded in {wall:.2f} s; used_memory {mem}; "
              f"DEBUG DIGEST took {time.monotonic() - t0:.2f} s", flush=True)

    def wait_master_idle(self):
        """No fork child and no replica left from a previous measurement."""
        def idle():
            p = self.master.info("persistence")
            r = self.master.info("replication")
            return p["rdb_bgsave_in_progress"] == "0" and r["connected_slaves"] == "0"
        wait_until("master to be idle", idle, self.timeout_s)

    def verify_copy(self, target, what):
        n = target.call("DBSIZE")
        if n != self.master_dbsize:
            raise BenchError(f"{what}: target has {n} keys, master {self.master_dbsize}")
        digest = target.call("DEBUG", "DIGEST")
        if digest != self.master_digest:
            raise BenchError(f"{what}: DEBUG DIGEST differs: {digest!r} vs master "
                             f"{self.master_digest!r}")

    def settle(self):
        """How busy the machine is just before a measurement starts, as a detail
        field; waits for quiet first when --wait-quiet is given."""
        deadline = time.monotonic() + self.a.wait_quiet
        busy = cpu_busy()
        while busy > QUIET and time.monotonic() < deadline:
            busy = cpu_busy()
        if busy > QUIET:
            self.disturbed += 1
            print(f"  warning: machine {busy:.0%} busy before this measurement "
                  "(other processes?): this run may be slow", flush=True)
        return f"busy_before={busy:.0%}"

    def last(self, run):
        return run == self.a.runs - 1

    def retire(self, server, run):
        """Stops a per-run server, unless --keep and this is the last run."""
        if self.a.keep and self.last(run):
            self.kept.append(server)
        else:
            server.stop()

    # ---- measurements ------------------------------------------------------

    def bgsave(self, run):
        self.wait_master_idle()
        before = int(self.master.info("persistence")["rdb_saves"])
        busy = self.settle()
        t0 = time.monotonic()
        self.master.call("BGSAVE")

        def done():
            p = self.master.info("persistence")
            return p["rdb_bgsave_in_progress"] == "0" and int(p["rdb_saves"]) > before
        t1 = wait_until("BGSAVE", done, self.timeout_s)
        p = self.master.info("persistence")
        if p["rdb_last_bgsave_status"] != "ok":
            raise BenchError(f"BGSAVE failed: see {self.master.log}")
        fork_us = self.master.info("stats")["latest_fork_usec"]
        rdb = os.path.join(self.master.dir, "dump.rdb")
        size = os.path.getsize(rdb)
        os.unlink(rdb)  # a GB per run otherwise
        cow = p["rdb_last_cow_size"]
        self.record("bgsave", run, t1 - t0,
                    f"rdb_bytes={size} fork_usec={fork_us} cow_bytes={cow} {busy}")

    def native_sync(self, run):
        self.wait_master_idle()
        replica = RedisServer(self.procs, f"replica{run}", self.work, self.a.replica_cpu,
                              REPLICA_ARGS).start()
        busy = self.settle()
        t0 = time.monotonic()
        replica.call("REPLICAOF", LOOPBACK, self.master.port)

        def synced():
            r = replica.info("replication")
            return r.get("master_link_status") == "up" and r.get("master_sync_in_progress") == "0"
        t1 = wait_until("native full sync", synced, self.timeout_s)
        fork_us = self.master.info("stats")["latest_fork_usec"]
        self.verify_copy(replica, "native sync")
        self.record("native_sync", run, t1 - t0, f"fork_usec={fork_us} {busy}")
        self.retire(replica, run)

    def sidecar(self, run):
        server_bin = self.binary("server/rdma-server")
        client_bin = self.binary("client/rdma-client")
        self.wait_master_idle()
        server = self.start_sidecar(server_bin, run)
        target = RedisServer(self.procs, f"target{run}", self.work, self.a.replica_cpu).start()
        if target.call("DBSIZE") != 0:
            raise BenchError("fresh target Redis is not empty")
        argv = pin_prefix(self.a.client_cpu) + [
            client_bin, LOOPBACK, str(server.port), "--redis", f"{LOOPBACK}:{target.port}"]
        log = os.path.join(self.work, f"client{run}.log")
        busy = self.settle()
        with open(log, "w") as err:
            t0 = time.monotonic()
            p = self.procs.start("rdma-client", argv, stdout=subprocess.PIPE, stderr=err,
                                 text=True)
            out, _ = p.communicate(timeout=self.timeout_s)
            wall = time.monotonic() - t0
        self.procs.stop(p)
        if p.returncode != 0:
            raise BenchError(f"rdma-client exited {p.returncode}:\n{out}{tail(log)}")
        synced = [ln for ln in out.splitlines() if ln.startswith("synced")]
        if not synced:
            raise BenchError(f"rdma-client printed no `synced` line:\n{out}")
        fields = kv_fields(synced[-1])
        self.verify_copy(target, "sidecar")
        self.record("client_wall", run, wall, f"{synced[-1]} {busy}")
        if "seconds" in fields:
            self.record("client_seconds", run, float(fields["seconds"]), "")
        self.retire(target, run)
        self.retire(server, run)

    def start_sidecar(self, server_bin, run):
        sidecar = Sidecar(self.procs, f"rdma-server{run}", self.work)
        argv = pin_prefix(self.a.server_cpu) + [
            server_bin, "--redis", f"{LOOPBACK}:{self.master.port}", "--listen", LOOPBACK,
            "--source", "scan", "--transport", "tcp"]
        busy = self.settle()
        ready_s, line = sidecar.start(argv, self.timeout_s)
        fields = kv_fields(line)
        if fields.get("records") not in (None, str(self.a.keys)):
            raise BenchError(f"rdma-server published {fields['records']} records, "
                             f"expected {self.a.keys}: {line}")
        self.record("server_ready", run, ready_s, f"{line} rss_mb={sidecar.rss_mb()} {busy}")
        if "build_s" in fields:
            self.record("server_build_s", run, float(fields["build_s"]), "")
        return sidecar

    def record(self, name, run, seconds, detail):
        self.samples[name].append((seconds, detail))
        print(f"  run {run + 1}/{self.a.runs} {name:<15} {seconds:8.3f} s  {detail}", flush=True)

    def run(self):
        print(f"pinning: {self.pinning}", flush=True)
        self.start_master()
        if not self.a.skip_native:
            for r in range(self.a.runs):
                self.bgsave(r)
            for r in range(self.a.runs):
                self.native_sync(r)
        if not self.a.skip_sidecar:
            for r in range(self.a.runs):
                self.sidecar(r)
        if self.a.keep:
            self.kept.insert(0, self.master)

    def cleanup(self, ok, interrupted=False):
        if ok and self.a.keep:
            print("\n--keep: still running (stop each with `kill PID`):")
            for name, p in self.procs.alive():
                print(f"  {name:<14} pid {p.pid}")
            for s in self.kept:
                if isinstance(s, RedisServer):
                    print(f"  {s.name}: redis-cli -p {s.port}")
            print(f"  files: {self.work}")
            return
        self.procs.stop_all()
        if ok or interrupted:
            shutil.rmtree(self.work, ignore_errors=True)
            return
        for d, _, files in os.walk(self.work):  # keep the logs, not GB of RDB
            for name in files:
                if name.endswith(".rdb"):
                    os.unlink(os.path.join(d, name))
        print(f"logs kept in {self.work}", file=sys.stderr)


class Sidecar:
    """rdma-server. Its stdout goes to a file (not a pipe, so it can outlive the
    harness under --keep) which is polled every 5 ms for the `ready` line."""

    def __init__(self, procs, name, workdir):
        self.procs, self.name = procs, name
        self.log = os.path.join(workdir, f"{name}.log")
        self.port = None
        self.proc = None

    def start(self, argv, timeout_s):
        self.port = free_port()
        argv = argv + ["--port", str(self.port)]
        with open(self.log, "w") as out, open(self.log + ".stderr", "w") as err:
            t0 = time.monotonic()
            self.proc = self.procs.start(self.name, argv, stdout=out, stderr=err)
        line = None

        def ready():
            nonlocal line
            with open(self.log, errors="replace") as f:
                for ln in f:
                    if ln.endswith("\n") and re.search(r"(^|\s)ready(\s|$)", ln):
                        line = ln.strip()
                        return True
            if self.proc.poll() is not None:
                raise BenchError(f"{self.name} exited {self.proc.returncode} before ready:\n"
                                 f"{tail(self.log)}{tail(self.log + '.stderr')}")
            return False
        t1 = wait_until(f"{self.name} `ready` line (is it flushing stdout?)", ready,
                        timeout_s, poll_s=0.005)
        return t1 - t0, line

    def rss_mb(self):
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                for ln in f:
                    if ln.startswith("VmRSS:"):
                        return int(ln.split()[1]) // 1024
        except OSError:
            pass
        return "?"

    def stop(self):
        if self.proc:
            self.procs.stop(self.proc)


def kv_fields(line):
    return dict(tok.split("=", 1) for tok in line.split() if "=" in tok)


# ---- report -----------------------------------------------------------------

def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def machine():
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
    thp = cmd("cat", "/sys/kernel/mm/transparent_hugepage/enabled")
    return [
        ("host", socket.gethostname()),
        ("nproc", f"{os.cpu_count()} (usable: {len(os.sched_getaffinity(0))})"),
        ("cpu", first("/proc/cpuinfo", "model name")),
        ("memory", f"{int(mem_kb) / 1024 / 1024:.1f} GiB" if mem_kb.isdigit() else "?"),
        ("kernel", platform.release()),
        ("transparent hugepages", thp),
        ("redis", cmd("redis-server", "--version")),
        ("python", platform.python_version()),
        ("source", source_version()),
    ]


def source_version():
    """The commit the binaries were presumably built from, and whether the tree was dirty."""
    def git(*argv):
        try:
            return subprocess.run(["git", "-C", REPO_DIR, *argv], capture_output=True,
                                  text=True).stdout.strip()
        except OSError:
            return ""
    sha = git("rev-parse", "--short", "HEAD")
    if not sha:
        return "?"
    return sha + (" + uncommitted changes" if git("status", "--porcelain") else "")


def summarize(samples):
    rows = []
    for name, what in MEASUREMENTS:
        xs = [s for s, _ in samples[name]]
        if xs:
            rows.append((name, statistics.median(xs), min(xs), max(xs), len(xs), what))
    return rows


def print_table(rows):
    print(f"\n{'measurement':<16}{'median s':>10}{'min s':>10}{'max s':>10}{'runs':>6}")
    for name, med, lo, hi, n, _ in rows:
        print(f"{name:<16}{med:>10.3f}{lo:>10.3f}{hi:>10.3f}{n:>6}")


def write_results(a, bench, rows, command):
    os.makedirs(a.results_dir, exist_ok=True)
    # Non-default Redis settings get their own file rather than overwrite the default's.
    suffix = "" if a.rdbcompression == "yes" else "-rdbcompression-no"
    stem = os.path.join(a.results_dir,
                        f"{datetime.date.today().isoformat()}-{socket.gethostname()}-sync{suffix}")
    with open(stem + ".csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["measurement", "run", "seconds", "keys", "value_size", "detail"])
        for name, _ in MEASUREMENTS:
            for i, (s, detail) in enumerate(bench.samples[name]):
                w.writerow([name, i + 1, f"{s:.4f}", a.keys, a.value_size, detail])
    payload = a.keys * a.value_size
    with open(stem + ".md", "w") as f:
        f.write(f"# Full sync on {socket.gethostname()}, "
                f"{datetime.datetime.now().isoformat(timespec='seconds')}\n\n")
        f.write(f"Command: `{command}`\n\n## Machine\n\n| | |\n|---|---|\n")
        for k, v in machine():
            f.write(f"| {k} | {v} |\n")
        f.write(f"\n## Data set\n\n{a.keys} keys `key:0000000000`.. x {a.value_size} random "
                f"bytes (gen_dataset, seed 1) = {payload / 1e6:.0f} MB of values; "
                f"all traffic on loopback.\n\nRedis settings beyond the defaults: master "
                f"`{' '.join(bench.master_args())}`; replica `{' '.join(REPLICA_ARGS)}`; all "
                f"`{shlex.join(RedisServer.BASE_ARGS)}`.\n\n"
                f"## Pinning\n\n{bench.pinning}\n\n")
        f.write(f"## Quiet?\n\nLoad average (1/5/15 min) at start {bench.loadavg_start}, "
                f"at end {loadavg()}. Measurements that started with the machine more than "
                f"{QUIET:.0%} busy: {bench.disturbed} (each run's `busy_before` is below).\n\n")
        f.write("## Results (wall time, CLOCK_MONOTONIC)\n\n"
                "| measurement | median s | min s | max s | runs | what |\n"
                "|---|---:|---:|---:|---:|---|\n")
        for name, med, lo, hi, n, what in rows:
            f.write(f"| {name} | {med:.3f} | {lo:.3f} | {hi:.3f} | {n} | {what} |\n")
        f.write("\n## Every run\n\n| measurement | run | seconds | detail |\n|---|---:|---:|---|\n")
        for name, _ in MEASUREMENTS:
            for i, (s, detail) in enumerate(bench.samples[name]):
                f.write(f"| {name} | {i + 1} | {s:.3f} | `{detail}` |\n" if detail else
                        f"| {name} | {i + 1} | {s:.3f} | |\n")
    return stem


def main(argv):
    a = parse_args(argv)
    command = shlex.join(["python3", os.path.relpath(os.path.abspath(__file__), REPO_DIR)] + argv)
    # SIGTERM / SIGHUP become an exception, so the finally below stops everything.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda s, _f: sys.exit(128 + s))
    try:
        bench = Bench(a)
    except BenchError as e:
        print(f"sync_bench: {e}", file=sys.stderr)
        return 2
    atexit.register(bench.procs.stop_all)  # belt and braces: nothing outlives us by accident
    ok = interrupted = False
    try:
        bench.run()
        ok = True
    except BenchError as e:
        print(f"sync_bench: {e}", file=sys.stderr)
    except (KeyboardInterrupt, SystemExit):
        interrupted = True
        print("sync_bench: interrupted", file=sys.stderr)
    finally:
        if ok and a.keep:
            atexit.unregister(bench.procs.stop_all)
        bench.cleanup(ok, interrupted)
    rows = summarize(bench.samples)
    if rows:
        print_table(rows)
    if ok:
        stem = write_results(a, bench, rows, command)
        print(f"\nwrote {stem}.md and {stem}.csv")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
