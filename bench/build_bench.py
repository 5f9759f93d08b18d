#!/usr/bin/env python3
"""Table build benchmark: rdma-server --source psync vs --source scan vs a native
diskless full sync of the same master, and what each costs the master.

One master (loaded once by gen_dataset, repl-diskless-sync yes, delay 0), then
--runs times, for each source (--systems):

  psync            rdma-server --source psync --transport tcp: connects as a
                   replica (PSYNC ? -1), the master forks and streams its RDB,
                   rdma-server parses it into the table. Wall time: spawn to
                   the `ready` line.
  scan             rdma-server --source scan: SCAN + DUMP + PEXPIRETIME from
                   the master's main thread. Wall time: spawn to `ready`.
  native-diskless  a fresh, empty redis-server replica (repl-diskless-load
                   swapdb) given REPLICAOF. Wall time: REPLICAOF to
                   master_link_status:up with the load done.

Per build: the master's main-thread CPU (/proc/PID/task/PID/stat), the master
process's CPU with its fork children (/proc/PID/stat utime+stime+cutime+
cstime), INFO commandstats (CONFIG RESETSTAT before each build), the
receiver's CPU and peak RSS (rdma-server or the replica redis-server), and
where the time went (rdma-server's stderr and the Redis logs, stamped).
Nothing is restarted between builds; the master's DBSIZE is checked before
each and its DEBUG DIGEST at the start and the end. Writes
bench/results/<date>-<host>-build.{md,csv}. See bench/README.md.
"""
import argparse
import datetime
import os
import re
import signal
import socket
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from benchlib import (add_build_dir_arg, add_results_args, add_wait_quiet_arg, built_binary,
                      choose_pinning, cleanup_work, command_line, key_value_table, run_harness,
                      write_csv, LOOPBACK, REPO_DIR, BenchError, Procs, RedisServer, Sidecar,
                      cpu_seconds, kv_fields, load_dataset, master_idle, peak_rss_mb,
                      replica_synced, reset_peak_rss, settle, tail, thread_cpu_seconds,
                      wait_until)
import report

SYSTEMS = ["psync", "scan", "native-diskless"]
WHAT = {
    "psync": "rdma-server --source psync --transport tcp: PSYNC ? -1, the master forks and "
             "streams its RDB (diskless), parsed into the table as it arrives; spawn to `ready`",
    "scan": "rdma-server --source scan --transport tcp: SCAN + pipelined DUMP + PEXPIRETIME "
            "from the master's main thread; spawn to `ready`",
    "native-diskless": "a fresh redis-server replica (repl-diskless-load swapdb) given "
                       "REPLICAOF; REPLICAOF to master_link_status:up, load done",
}
QUIET = 0.15  # CPU busy fraction above which a measurement is flagged as disturbed
MASTER_POLL_S = 0.05  # the harness's own INFO polls cost the master's main thread: few
TARGET_PSYNC_VS_NATIVE = 1.2  # psync build <= 1.2x native diskless
TARGET_SCAN_VS_PSYNC = 2.0    # psync >= 2x faster than scan
CMDSTATS = ("dump", "scan", "pexpiretime", "psync", "replconf")
CSV_FIELDS = [
    "system", "run", "keys", "value_size", "wall_s", "build_s", "records", "table_mb", "offset",
    "master_main_cpu_s", "master_proc_cpu_s", "master_children_cpu_s", "master_total_cpu_s",
    "cmd_usec_total"] + [f"cmd_{c}_{k}" for c in CMDSTATS for k in ("calls", "usec")] + [
    "forks", "fork_ms", "master_cow_mb", "master_peak_rss_mb", "master_out_mb",
    "receiver_cpu_s", "receiver_peak_rss_mb", "t_fullresync_s", "t_child_done_s",
    "t_rdb_done_s", "t_ready_s", "busy_before"]


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--keys", type=int, default=1_000_000, help="keys (default 1,000,000)")
    p.add_argument("--value-size", type=int, default=1000,
                   help="random bytes per value (default 1000)")
    p.add_argument("--scale", type=float, default=1.0, help="multiply --keys")
    p.add_argument("--runs", type=int, default=1, help="repetitions; median (min-max) reported")
    p.add_argument("--systems", default=",".join(SYSTEMS),
                   help=f"comma-separated, in this order, from {', '.join(SYSTEMS)}")
    p.add_argument("--rdbcompression", choices=("yes", "no"), default="yes",
                   help="the master's rdbcompression (Redis' default: yes); 'no' adds "
                        "-rdbcompression-no to the results file name")
    add_build_dir_arg(p)
    p.add_argument("--master-cpu", type=int, default=0)
    p.add_argument("--replica-cpu", type=int, default=1,
                   help="CPU for the receiver (rdma-server or the native replica) and "
                        "gen_dataset")
    p.add_argument("--no-pin", action="store_true", help="pin nothing")
    add_wait_quiet_arg(p, "build", QUIET)
    add_results_args(p)
    a = p.parse_args(argv)
    a.systems = a.systems.split(",")
    for s in a.systems:
        if s not in SYSTEMS:
            p.error(f"--systems: unknown {s!r}; choose from {', '.join(SYSTEMS)}")
    a.keys = max(1, int(a.keys * a.scale))
    if a.runs < 1 or a.value_size < 1:
        p.error("--runs and --value-size must be positive")
    return a


# ---- Redis log timestamps -------------------------------------------------------

LOG_LINE = re.compile(r"^\d+:[A-Z] (\d+ \w+ \d+ \d+:\d+:\d+\.\d+) [.\-*#] (.*)$")


def redis_log_events(path, since_unix):
    """[(seconds after since_unix, message)] of a Redis log's lines from then on
    (Redis stamps them with the wall clock, to the millisecond)."""
    events = []
    try:
        with open(path, errors="replace") as f:
            for ln in f:
                m = LOG_LINE.match(ln.rstrip("\n"))
                if not m:
                    continue
                t = datetime.datetime.strptime(m.group(1), "%d %b %Y %H:%M:%S.%f").timestamp()
                if t >= since_unix - 0.001:  # Redis truncates its stamps to the ms
                    events.append((max(0.0, t - since_unix), m.group(2)))
    except OSError:
        pass
    return events


def first_event(events, needle):
    """Seconds of the first event whose text contains needle, or None."""
    return next((t for t, msg in events if needle in msg), None)


def cmdstats(info):
    """INFO commandstats -> {command: (calls, usec)}."""
    out = {}
    for k, v in info.items():
        if k.startswith("cmdstat_"):
            f = dict(kv.split("=", 1) for kv in v.split(","))
            out[k[len("cmdstat_"):]] = (int(f["calls"]), int(f["usec"]))
    return out


class BuildBench:
    def __init__(self, args):
        self.a = args
        for rel in ("bench/gen_dataset", "server/rdma-server"):
            self.binary(rel)  # fail before minutes of work, not after
        self.pinning = choose_pinning(args, (
            f"master redis-server: CPU {args.master_cpu} (its fork child inherits it); the "
            f"receiver (rdma-server, or the native replica redis-server) and gen_dataset: "
            f"CPU {args.replica_cpu}, so each source has the same two cores in the same roles"))
        self.procs = Procs()
        self.work = tempfile.mkdtemp(prefix="build_bench.")
        self.rows = []
        self.load = {}
        self.disturbed = 0
        self.loadavg_start = report.loadavg()
        self.master = None
        self.timeout_s = 180 + args.keys * args.value_size / 2e6  # 2 MB/s: far below any path

    def binary(self, rel):
        return built_binary(
            self.a.build_dir, rel,
            f"build Release first (cmake -S {REPO_DIR} -B {self.a.build_dir} -G Ninja "
            f"-DCMAKE_BUILD_TYPE=Release && cmake --build {self.a.build_dir})")

    def pin(self):
        return [] if self.a.replica_cpu is None else ["taskset", "-c", str(self.a.replica_cpu)]

    def settle(self):
        busy = settle(self.a.wait_quiet, QUIET)
        if busy > QUIET:
            self.disturbed += 1
            print(f"  warning: machine {busy:.0%} busy before this build: it may be slow",
                  flush=True)
        return busy

    # ---- the master -------------------------------------------------------

    def start_master(self):
        a = self.a
        self.master = RedisServer(self.procs, "master", self.work, a.master_cpu, [
            "--rdbcompression", a.rdbcompression, "--repl-diskless-sync", "yes",
            "--repl-diskless-sync-delay", "0"]).start()
        print(f"loading the master (port {self.master.port}): {a.keys:,} keys x "
              f"{a.value_size:,} random bytes ...", flush=True)
        wall, detail = load_dataset(self.procs, self.binary("bench/gen_dataset"),
                                    self.master.port, a.keys, a.value_size, cpu=a.replica_cpu,
                                    timeout_s=self.timeout_s)
        n = self.master.call("DBSIZE")
        if n != a.keys:
            raise BenchError(f"master has {n} keys, expected {a.keys}")
        self.digest = self.master.call("DEBUG", "DIGEST")
        mem = self.master.info("memory")
        self.load = {"seconds": wall, "used_memory": mem["used_memory_human"],
                     "rss": mem["used_memory_rss_human"], "detail": detail}
        print(f"  loaded in {wall:.1f} s; used_memory {mem['used_memory_human']}", flush=True)

    def wait_master(self, replicas_allowed=0):
        """Until the master has no fork child and at most that many replicas."""
        wait_until("the master to be idle", lambda: master_idle(self.master, replicas_allowed),
                   self.timeout_s, poll_s=MASTER_POLL_S)

    # ---- one build --------------------------------------------------------

    def measure(self, system, run):
        """One build from `system`, with the master's cost around it."""
        self.wait_master()
        n = self.master.call("DBSIZE")
        if n != self.a.keys:
            raise BenchError(f"before {system}: the master has {n} keys, expected {self.a.keys}")
        self.master.call("CONFIG", "RESETSTAT")
        busy = self.settle()
        pid = self.master.proc.pid
        reset_peak_rss(pid)
        m0 = (thread_cpu_seconds(pid), cpu_seconds(pid, children=False), cpu_seconds(pid))
        since_unix = time.time()
        if system == "native-diskless":
            row, teardown = self.native(run)
        else:
            row, teardown = self.sidecar(system, run)
        # The fork child (psync, native) is reaped: its CPU is in cutime now.
        self.wait_master(replicas_allowed=1)
        m1 = (thread_cpu_seconds(pid), cpu_seconds(pid, children=False), cpu_seconds(pid))
        stats = self.master.info("stats")
        cmds = cmdstats(self.master.info("commandstats"))
        forks = int(stats.get("total_forks", 0))
        row.update({
            "system": system, "run": run + 1, "keys": self.a.keys, "value_size": self.a.value_size,
            "master_main_cpu_s": m1[0] - m0[0], "master_proc_cpu_s": m1[1] - m0[1],
            "master_children_cpu_s": max(0.0, round((m1[2] - m0[2]) - (m1[1] - m0[1]), 3)),
            "master_total_cpu_s": m1[2] - m0[2],
            "cmd_usec_total": sum(u for c, (_, u) in cmds.items() if c not in ("info", "config")),
            "forks": forks,
            "fork_ms": int(stats.get("latest_fork_usec", 0)) / 1000 if forks else None,
            "master_cow_mb": (int(self.master.info("persistence").get("rdb_last_cow_size", 0))
                              / 2**20 if forks else None),
            "master_peak_rss_mb": peak_rss_mb(pid),
            # Redis 7.0's total_net_output_bytes already includes the replication stream.
            "master_out_mb": int(stats.get("total_net_output_bytes", 0)) / 1e6,
            "busy_before": busy})
        for c in CMDSTATS:
            calls, usec = cmds.get(c, (0, 0))
            row[f"cmd_{c}_calls"], row[f"cmd_{c}_usec"] = calls, usec
        master_log = redis_log_events(self.master.log, since_unix)
        # The fork child finished writing the RDB (the main thread read the pipe to its end).
        row["t_child_done_s"] = first_event(master_log, "done reading from pipe")
        teardown()
        self.rows.append(row)
        print(f"  run {run + 1} {system:<15} {row['wall_s']:6.2f} s; master main thread "
              f"{row['master_main_cpu_s']:.2f} s CPU, with fork child "
              f"{row['master_total_cpu_s']:.2f} s; receiver {row['receiver_cpu_s']:.2f} s CPU, "
              f"{row['receiver_peak_rss_mb']:.0f} MiB peak", flush=True)

    def sidecar(self, source, run):
        server = Sidecar(self.procs, f"rdma-server-{source}{run}", self.work)
        argv = self.pin() + [self.binary("server/rdma-server"), "--snapshot-at-start", "--redis",
                             f"{LOOPBACK}:{self.master.port}", "--listen", LOOPBACK,
                             "--source", source, "--transport", "tcp"]
        ready_s, line = server.start(argv, self.timeout_s)
        cpu = cpu_seconds(server.proc.pid, children=False)
        f = kv_fields(line)
        if f.get("records") != str(self.a.keys) or f.get("source") != source:
            raise BenchError(f"rdma-server published records={f.get('records')} "
                             f"source={f.get('source')}, expected {self.a.keys} and {source}: "
                             f"{line}")

        def at(needle):
            return next((t for t, ln in server.events if needle in ln), None)
        row = {"wall_s": ready_s, "build_s": float(f["build_s"]), "records": int(f["records"]),
               "table_mb": int(f.get("bytes", 0)) / 2**20, "offset": f.get("offset"),
               "receiver_cpu_s": cpu,
               "t_fullresync_s": at("began a full resync"), "t_rdb_done_s": at("RDB complete"),
               "t_ready_s": ready_s}

        def teardown():
            row["receiver_peak_rss_mb"] = peak_rss_mb(server.proc.pid)
            server.stop()
            if server.proc.returncode not in (0, -signal.SIGTERM):
                raise BenchError(f"rdma-server exited {server.proc.returncode} on SIGTERM:\n"
                                 f"{tail(server.log + '.stderr')}")
        return row, teardown

    def native(self, run):
        replica = RedisServer(self.procs, f"replica{run}", self.work, self.a.replica_cpu,
                              ["--repl-diskless-load", "swapdb"]).start()
        rpid = replica.proc.pid
        reset_peak_rss(rpid)
        r0 = cpu_seconds(rpid, children=False)
        since_unix = time.time()
        t0 = time.monotonic()
        replica.call("REPLICAOF", LOOPBACK, self.master.port)
        t1 = wait_until("the native replica's full sync", lambda: replica_synced(replica),
                        self.timeout_s)
        cpu = cpu_seconds(rpid, children=False) - r0
        n = replica.call("DBSIZE")
        if n != self.a.keys:
            raise BenchError(f"native replica has {n} keys, expected {self.a.keys}")
        log = redis_log_events(replica.log, since_unix)
        row = {"wall_s": t1 - t0, "build_s": None, "records": n,
               "offset": replica.info("replication").get("master_repl_offset"),
               "receiver_cpu_s": cpu, "receiver_peak_rss_mb": peak_rss_mb(rpid),
               "t_fullresync_s": first_event(log, "Full resync from master"),
               "t_rdb_done_s": first_event(log, "Finished with success"), "t_ready_s": t1 - t0}

        def teardown():
            replica.call("REPLICAOF", "NO", "ONE")
            replica.stop()
        return row, teardown

    def run(self):
        print(f"pinning: {self.pinning}", flush=True)
        self.start_master()
        for run in range(self.a.runs):
            for system in self.a.systems:
                self.measure(system, run)
        self.wait_master()
        if self.master.call("DEBUG", "DIGEST") != self.digest:
            raise BenchError("the master's DEBUG DIGEST changed during the benchmark")
        self.master.stop()

    def cleanup(self, ok):
        cleanup_work(self.procs, self.work, keep=not ok)


# ---- the report -------------------------------------------------------------------

def med(rows, key):
    """(median, min, max) of a field over runs, or None."""
    return report.stats([r.get(key) for r in rows])


def fmt(st, unit="", digits=2, spread=True):
    if st is None:
        return "-"
    m, lo, hi = st
    s = f"{m:,.{digits}f}{unit}"
    if spread and hi > lo:
        s += f" ({lo:,.{digits}f}-{hi:,.{digits}f})"
    return s


def by_system(rows):
    return {s: [r for r in rows if r["system"] == s] for s in SYSTEMS
            if any(r["system"] == s for r in rows)}


def summary_table(rows):
    groups = by_system(rows)
    out = ["| source | wall s | rdma-server build_s | master main-thread CPU s | "
           "master CPU incl. fork child s | of which fork child s | master commandstats usec "
           "(dump / scan / pexpiretime) | receiver CPU s | receiver peak RSS MiB |",
           "|---|---|---|---|---|---|---|---|---|"]
    for s, rs in groups.items():
        cmd = " / ".join(fmt(med(rs, f"cmd_{c}_usec"), digits=0, spread=False)
                         for c in ("dump", "scan", "pexpiretime"))
        out.append(
            f"| {s} | **{fmt(med(rs, 'wall_s'))}** | {fmt(med(rs, 'build_s'))} | "
            f"{fmt(med(rs, 'master_main_cpu_s'))} | {fmt(med(rs, 'master_total_cpu_s'))} | "
            f"{fmt(med(rs, 'master_children_cpu_s'))} | {cmd} | "
            f"{fmt(med(rs, 'receiver_cpu_s'))} | {fmt(med(rs, 'receiver_peak_rss_mb'), digits=0)} |")
    return "\n".join(out)


def timeline_table(rows):
    groups = by_system(rows)
    out = ["| source | +FULLRESYNC (handshake + fork) | master's fork child done (pipe EOF) | "
           "receiver has the whole RDB | ready / synced | fork ms | master copy-on-write MiB | "
           "master sent MB |", "|---|---|---|---|---|---|---|---|"]
    for s, rs in groups.items():
        out.append(f"| {s} | {fmt(med(rs, 't_fullresync_s'))} | {fmt(med(rs, 't_child_done_s'))} "
                   f"| {fmt(med(rs, 't_rdb_done_s'))} | {fmt(med(rs, 't_ready_s'))} | "
                   f"{fmt(med(rs, 'fork_ms'), digits=1)} | {fmt(med(rs, 'master_cow_mb'), digits=1)}"
                   f" | {fmt(med(rs, 'master_out_mb'), digits=0)} |")
    return "\n".join(out)


def read_off(rows):
    g = by_system(rows)
    wall = {s: med(rs, "wall_s")[0] for s, rs in g.items()}
    lines = []
    if "psync" in wall and "native-diskless" in wall:
        r = wall["psync"] / wall["native-diskless"]
        lines.append(f"- psync build / native diskless full sync: {wall['psync']:.2f} s / "
                     f"{wall['native-diskless']:.2f} s = **{r:.2f}x** (target <= "
                     f"{TARGET_PSYNC_VS_NATIVE}x: **{'met' if r <= TARGET_PSYNC_VS_NATIVE else 'missed'}**)")
    if "psync" in wall and "scan" in wall:
        r = wall["scan"] / wall["psync"]
        lines.append(f"- scan build / psync build: {wall['scan']:.2f} s / {wall['psync']:.2f} s "
                     f"= psync **{r:.2f}x** faster (target >= {TARGET_SCAN_VS_PSYNC}x: "
                     f"**{'met' if r >= TARGET_SCAN_VS_PSYNC else 'missed'}**)")
    if "psync" in g:
        b = med(g["psync"], "build_s")[0]
        lines.append(f"- psync by rdma-server's own build_s ({b:.2f} s, from connecting to the "
                     f"table published; the wall time adds process start): "
                     + (f"{b / wall['native-diskless']:.2f}x native" if "native-diskless" in wall
                        else "")
                     + (f", scan's build_s / psync's = "
                        f"{med(g['scan'], 'build_s')[0] / b:.2f}x" if "scan" in g else ""))
    lines.append("- the master's main-thread CPU per source (its event loop: what the master's "
                 "clients compete with), and the whole process with its fork child:")
    for s, rs in g.items():
        main, total = med(rs, "master_main_cpu_s")[0], med(rs, "master_total_cpu_s")[0]
        extra = ""
        if s == "scan":
            usec = sum(med(rs, f"cmd_{c}_usec")[0] for c in ("dump", "scan", "pexpiretime"))
            extra = (f"; INFO commandstats: {usec / 1e6:.2f} s inside DUMP + SCAN + "
                     f"PEXPIRETIME (wall time in the commands, so it exceeds the CPU when the "
                     f"main thread was preempted; the CPU beyond it is reading requests and "
                     f"writing replies)")
        lines.append(f"  - {s}: main thread **{main:.2f} s**, with the fork child "
                     f"{total:.2f} s{extra}")
    if "psync" in g and "native-diskless" in g:
        p, n = (med(g[s], "master_main_cpu_s")[0] for s in ("psync", "native-diskless"))
        sc = med(g["scan"], "master_main_cpu_s")[0] if "scan" in g else None
        lines.append(f"- main thread, psync vs native diskless: {p:.2f} s vs {n:.2f} s "
                     f"({p / n:.2f}x: the same fork + pipe relay)"
                     + (f"; scan costs it {sc / p:.1f}x psync's" if sc and p else ""))
    return "\n".join(lines)


def write_report(a, bench, command, ok):
    host = socket.gethostname()
    stem = f"{datetime.date.today().isoformat()}-{host}-build"
    if a.rdbcompression == "no":
        stem += "-rdbcompression-no"
    if a.tag:
        stem += f"-{a.tag}"
    os.makedirs(a.results_dir, exist_ok=True)
    path = os.path.join(a.results_dir, stem)
    write_csv(path + ".csv", CSV_FIELDS, bench.rows)
    md = [f"# Table build: psync vs scan vs native diskless full sync ({host}, "
          f"{datetime.date.today().isoformat()})", ""]
    if not ok:
        md += ["**The run did not finish: this holds what was measured.**", ""]
    md += ["## Machine", ""] + key_value_table(report.machine(REPO_DIR) + [
        ("load average", f"{bench.loadavg_start} at the start, {report.loadavg()} at the end"),
        ("pinning", bench.pinning)])
    md += ["", "## Data set and command", "",
           f"{a.keys:,} keys x {a.value_size:,} random bytes (strings, gen_dataset), "
           f"{a.keys * a.value_size / 1e6:,.0f} MB of values; master used_memory "
           f"{bench.load.get('used_memory', '?')} (RSS {bench.load.get('rss', '?')}), "
           f"`rdbcompression {a.rdbcompression}`, `repl-diskless-sync yes`, "
           f"`repl-diskless-sync-delay 0`, `--save ''`. One master for every build; nothing "
           f"restarted between builds (CONFIG RESETSTAT before each; DBSIZE checked before each, "
           f"DEBUG DIGEST unchanged from the start to the end). {a.runs} run(s)"
           + (", median (min-max)" if a.runs > 1 else "") + ".", "",
           f"```\n{command}\n```", ""]
    md += [f"- **{s}**: {WHAT[s]}" for s in a.systems]
    md += ["", "## Results", "", summary_table(bench.rows), "",
           "Wall times are CLOCK_MONOTONIC. Master CPU is the delta over the build, until its "
           "fork child (if any) was reaped: main thread = utime + stime of "
           "`/proc/PID/task/PID/stat`; incl. fork child = utime + stime + cutime + cstime of "
           "`/proc/PID/stat` (all threads, and the child Redis reaped). Commandstats usec is wall "
           "time inside the commands (CONFIG RESETSTAT before each build). Receiver = "
           "rdma-server, or the replica redis-server for native; its peak RSS is VmHWM.", "",
           "### Where the time went (seconds from the start)", "",
           timeline_table(bench.rows), "",
           "rdma-server's stderr lines are stamped when the harness first sees them (5 ms "
           "polls); the master's and replica's from their logs (ms). `+FULLRESYNC`: rdma-server "
           "logs `began a full resync`, the replica `Full resync from master` (Redis sends it "
           "once the fork is done). Fork child done: the master log's `done reading from pipe`. "
           "Whole RDB: `RDB complete` / `Finished with success` (the replica's includes its "
           "load). For scan only ready applies.", ""]
    if bench.disturbed:
        md += [f"**{bench.disturbed} build(s) started with the machine over {QUIET:.0%} busy: "
               "treat those figures as disturbed.** (busy_before in the CSV.)", ""]
    md += ["## Read off", "", read_off(bench.rows) if bench.rows else "(nothing measured)", ""]
    with open(path + ".md", "w") as f:
        f.write("\n".join(md))
    return path, summary_table(bench.rows)


def main(argv):
    a = parse_args(argv)
    command = command_line(__file__, argv, python="/usr/bin/python3")
    bench, ok = run_harness("build_bench", lambda: BuildBench(a))
    if bench is None:
        return 2
    if not bench.rows:
        return 1
    path, table = write_report(a, bench, command, ok)
    print(f"\n{table}\n\n{read_off(bench.rows)}\n\nwrote {path}.md and {path}.csv")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
