#!/usr/bin/env python3
"""The TCP transport with TLS against without: what --tls costs a replica.

One master loaded by gen_dataset (default 1,000,000 x 1000 B strings, about
1 GB); two rdma-servers beside it, each holding a table of the same data
(--snapshot-at-start): one plain (`--transport tcp`), one with mutual TLS
1.3 (`--tls --tls-cert --tls-key --tls-cacert`, certificates made with
openssl for the run). Then, --runs times, alternating plain and TLS so that
drift hits both alike:

  no-load   rdma-client --no-load: the table read and validated, nothing
            loaded; isolates the transfer. MB/s = table bytes / wall.
  restore   rdma-client --mode restore into an empty target (pipelined
            RESTORE).
  replica   rdma-client --mode replica into an empty target (repl-diskless-
            load swapdb) that becomes a replica of the client.

Every figure is wall time from the client's spawn to its exit
(CLOCK_MONOTONIC), median (min-max) of the runs; TLS / plain from the same
run. Every loaded target is checked against the master (DBSIZE, DEBUG
DIGEST). The client's log names the negotiated cipher and whether the
kernel does the encryption (kernel TLS needs the `tls` module: `modprobe
tls`; on a kernel without it OpenSSL encrypts in user space); the report
says which. Writes bench/results/<date>-<host>-tls[-tag].{md,csv}.
"""
import argparse
import csv
import datetime
import os
import platform
import re
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from benchlib import (add_build_dir_arg, add_results_args, add_server_args, built_binary,
                      cleanup_work, command_line, cpu_seconds, key_value_table, kv_fields, load_dataset,
                      resolve_servers, run_harness, share_sidecar_secret, tail, wait_until,
                      BenchError, LOOPBACK, REPO_DIR, Procs, RedisServer, Sidecar)
import report

MODES = ["no-load", "restore", "replica"]
WIRES = ["plain", "tls"]


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--keys", type=int, default=1_000_000)
    p.add_argument("--value-size", type=int, default=1000)
    p.add_argument("--runs", type=int, default=5, help="repetitions of each mode and wire")
    p.add_argument("--modes", default=",".join(MODES),
                   help=f"comma-separated, from {', '.join(MODES)}")
    p.add_argument("--keep-logs", action="store_true", help="keep the work directory")
    add_build_dir_arg(p)
    add_server_args(p)
    add_results_args(p)
    a = p.parse_args(argv)
    a.modes = a.modes.split(",")
    for m in a.modes:
        if m not in MODES:
            p.error(f"--modes: unknown mode {m!r}; choose from {', '.join(MODES)}")
    resolve_servers(p, a)
    return a


def make_pki(d):
    """A CA, a certificate for 127.0.0.1 (the sidecar) and one for the client."""
    def run(*argv):
        r = subprocess.run(["openssl", *argv], cwd=d, capture_output=True, text=True)
        if r.returncode != 0:
            raise BenchError(f"openssl {' '.join(argv[:2])} failed: {r.stderr.strip()}")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    run("req", "-x509", "-new", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
        "-subj", "/CN=bench-ca")
    for name, san in (("server", "IP:127.0.0.1"), ("client", "DNS:client")):
        run("req", "-new", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr",
            "-subj", f"/CN={name}")
        with open(os.path.join(d, f"{name}.ext"), "w") as f:
            f.write(f"subjectAltName={san}\n")
        run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "2", "-out", f"{name}.crt", "-extfile", f"{name}.ext")
    return {k: os.path.join(d, k) for k in
            ("ca.crt", "server.crt", "server.key", "client.crt", "client.key")}


def kernel_tls_available():
    try:
        with open("/proc/sys/net/ipv4/tcp_available_ulp") as f:
            return "tls" in f.read().split()
    except OSError:
        return False


class TlsBench:
    def __init__(self, a):
        self.a = a
        self.procs = Procs()
        self.work = tempfile.mkdtemp(prefix="rrs-tls-bench.")
        how = "build it (cmake --build build)"
        self.server_bin = built_binary(a.build_dir, "server/rdma-server", how)
        self.client_bin = built_binary(a.build_dir, "client/rdma-client", how)
        self.gen = built_binary(a.build_dir, "bench/gen_dataset", how)
        self.rows = []  # one per client run
        self.session = None  # the client's "TLSv1.3 ...; kernel TLS ..." line
        self.table = {}  # wire -> the server's ready line fields
        self.dataset_line = ""

    def run(self):
        a = self.a
        pki = make_pki(self.work)
        self.master = RedisServer(self.procs, "master", self.work, server=a.server,
                                  extra_args=["--repl-diskless-sync", "yes",
                                              "--repl-diskless-sync-delay", "0"]).start()
        print(f"loading {a.keys:,} x {a.value_size} B into the master", file=sys.stderr)
        _, self.dataset_line = load_dataset(self.procs, self.gen, self.master.port, a.keys,
                                            a.value_size)
        self.digest = self.master.call("DEBUG", "DIGEST")
        self.dbsize = self.master.call("DBSIZE")
        base = [self.server_bin, "--redis", f"{LOOPBACK}:{self.master.port}", "--transport",
                "tcp", "--snapshot-at-start", "--table-retain", "-1"]
        tls_server = ["--tls", "--tls-cert", pki["server.crt"], "--tls-key", pki["server.key"],
                      "--tls-cacert", pki["ca.crt"]]
        self.client_tls = ["--tls", "--tls-cacert", pki["ca.crt"], "--tls-cert",
                           pki["client.crt"], "--tls-key", pki["client.key"]]
        self.sidecars = {}
        for wire, extra in (("plain", []), ("tls", tls_server)):
            s = Sidecar(self.procs, f"sidecar-{wire}", self.work)
            secs, line = s.start(base + extra, timeout_s=1800)
            self.table[wire] = kv_fields(line)
            print(f"{wire}: table ready after {secs:.1f} s: {line}", file=sys.stderr)
            self.sidecars[wire] = s
        for run in range(1, a.runs + 1):
            for mode in a.modes:
                order = WIRES if run % 2 else list(reversed(WIRES))
                for wire in order:
                    self.rows.append(self.one(run, mode, wire))

    def one(self, run, mode, wire):
        a = self.a
        argv = [self.client_bin, LOOPBACK, str(self.sidecars[wire].port), "--transport", "tcp"]
        argv += self.client_tls if wire == "tls" else []
        target = None
        if mode == "no-load":
            argv += ["--no-load"]
        else:
            extra = ["--repl-diskless-load", "swapdb"] if mode == "replica" else []
            target = RedisServer(self.procs, f"target-{run}-{mode}-{wire}", self.work,
                                 server=a.server, extra_args=extra).start()
            argv += ["--redis", f"{LOOPBACK}:{target.port}", "--mode", mode]
        err_path = os.path.join(self.work, f"client-{run}-{mode}-{wire}.stderr")
        server_pid = self.sidecars[wire].proc.pid
        server_cpu0 = cpu_seconds(server_pid, children=False)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        with open(err_path, "w") as err:
            t0 = time.monotonic()
            p = self.procs.start("rdma-client", argv, stdout=subprocess.PIPE, stderr=err,
                                 text=True)
            out, _ = p.communicate(timeout=3600)
            wall = time.monotonic() - t0
        self.procs.stop(p)
        # The client is the only child reaped meanwhile: its CPU time.
        now = resource.getrusage(resource.RUSAGE_CHILDREN)
        client_cpu = now.ru_utime + now.ru_stime - kids.ru_utime - kids.ru_stime
        server_cpu = cpu_seconds(server_pid, children=False) - server_cpu0
        if p.returncode != 0:
            raise BenchError(f"rdma-client ({mode}, {wire}) exited {p.returncode}:\n"
                             f"{tail(err_path)}")
        synced = next((kv_fields(ln) for ln in out.splitlines() if ln.startswith("synced ")), {})
        with open(err_path) as f:
            m = re.search(r"transport: TLS with rdma-server at \S+ \((.*)\)", f.read())
        if m:
            self.session = m.group(1)
        if target:
            if mode == "replica":
                wait_until("the target to finish loading", lambda: target.info(
                    "replication").get("master_sync_in_progress") == "0", 600)
            got = (target.call("DBSIZE"), target.call("DEBUG", "DIGEST"))
            if got != (self.dbsize, self.digest):
                raise BenchError(f"{mode} over {wire}: the target holds {got[0]} keys, digest "
                                 f"{got[1]}; the master {self.dbsize}, {self.digest}")
            target.stop()
        table_bytes = int(self.table[wire].get("bytes", 0))
        row = {"run": run, "mode": mode, "wire": wire, "wall_s": wall,
               "transfer_s": float(synced.get("transfer_s", "nan")),
               "table_MBps": table_bytes / wall / 1e6, "client_cpu_s": client_cpu,
               "server_cpu_s": server_cpu, "keys": synced.get("keys", "")}
        print(f"run {run} {mode:8} {wire:5}: {wall:.2f} s", file=sys.stderr)
        return row

    def cleanup(self, ok):
        cleanup_work(self.procs, self.work, self.a.keep_logs or not ok)


def med(rows, mode, wire, key="wall_s"):
    xs = [r[key] for r in rows if r["mode"] == mode and r["wire"] == wire]
    return (statistics.median(xs), min(xs), max(xs)) if xs else None


def write_report(a, bench, command, ok):
    host = socket.gethostname()
    date = datetime.date.today().isoformat()
    stem = os.path.join(a.results_dir, f"{date}-{host}-tls" + (f"-{a.tag}" if a.tag else ""))
    os.makedirs(a.results_dir, exist_ok=True)
    with open(stem + ".csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["run", "mode", "wire", "wall_s", "transfer_s",
                                          "table_MBps", "client_cpu_s", "server_cpu_s", "keys"])
        w.writeheader()
        for r in bench.rows:
            w.writerow({k: (f"{v:.4f}" if isinstance(v, float) else v) for k, v in r.items()})
    kernel = ("available (`tls` in tcp_available_ulp)" if kernel_tls_available()
              else "not available on this kernel: OpenSSL encrypts in user space")
    md = [f"# The TCP transport with TLS against without ({host}, {date})", ""]
    if not ok:
        md += ["**The run did not finish: this holds what was measured.**", ""]
    md += ["## Machine", ""] + key_value_table(report.machine(REPO_DIR, report.servers_of(a)) + [
        ("python", platform.python_version()), ("kernel TLS", kernel),
        ("session", f"`{bench.session}`" if bench.session else "?")])
    plain_bytes = bench.table.get("plain", {}).get("bytes", "?")
    md += ["", "## Data and command", "",
           f"{a.keys:,} strings of {a.value_size} B ({bench.dataset_line}); each rdma-server "
           f"holds a table of {plain_bytes} bytes. Client wall time from spawn to exit, "
           f"CLOCK_MONOTONIC; median (min-max) of {a.runs} runs, plain and TLS alternating.", "",
           f"```\n{command}\n```", "",
           "## Results", "",
           "| mode | plain s | TLS s | TLS / plain time | plain MB/s | TLS MB/s | TLS / plain "
           "throughput | client CPU s plain / TLS | rdma-server CPU s plain / TLS |",
           "|---|---|---|---|---|---|---|---|---|"]
    for mode in a.modes:
        p, t = med(bench.rows, mode, "plain"), med(bench.rows, mode, "tls")
        pm, tm = med(bench.rows, mode, "plain", "table_MBps"), med(bench.rows, mode, "tls",
                                                                  "table_MBps")
        if not p or not t:
            continue
        cpu = {(who, wire): med(bench.rows, mode, wire, f"{who}_cpu_s")[0]
               for who in ("client", "server") for wire in WIRES}
        md.append(f"| {mode} | {p[0]:.2f} ({p[1]:.2f}-{p[2]:.2f}) | {t[0]:.2f} ({t[1]:.2f}-"
                  f"{t[2]:.2f}) | {t[0] / p[0]:.2f}x | {pm[0]:.0f} | {tm[0]:.0f} | "
                  f"{tm[0] / pm[0]:.2f}x | {cpu['client', 'plain']:.2f} / "
                  f"{cpu['client', 'tls']:.2f} | {cpu['server', 'plain']:.2f} / "
                  f"{cpu['server', 'tls']:.2f} |")
    md += ["", "MB/s: the table's bytes over the client's wall time (for restore and replica, "
           "the whole load's pace, not the wire's). CPU: user + system seconds of the client "
           "process and of the serving rdma-server over the run (medians); the targets' and "
           "the master's are not counted.", "",
           "## Per run", "", "| run | mode | wire | wall s | client transfer_s |",
           "|---|---|---|---|---|"]
    md += [f"| {r['run']} | {r['mode']} | {r['wire']} | {r['wall_s']:.2f} | "
           f"{r['transfer_s']:.2f} |" for r in bench.rows]
    with open(stem + ".md", "w") as f:
        f.write("\n".join(md) + "\n")
    return stem


def main(argv):
    share_sidecar_secret()
    a = parse_args(argv)
    command = command_line(__file__, argv)
    bench, ok = run_harness("tls_bench", lambda: TlsBench(a))
    if bench is None:
        return 2
    if not bench.rows:
        return 1
    stem = write_report(a, bench, command, ok)
    with open(stem + ".md") as f:
        print("\n" + f.read())
    print(f"wrote {stem}.md and {stem}.csv")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
