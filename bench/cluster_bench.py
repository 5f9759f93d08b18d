#!/usr/bin/env python3
"""Whole-cluster copy benchmark (issue 21): rdma-client --cluster vs redis-cli
--cluster import vs native full syncs.

One data set (default: 1,000,000 x 1000 B random strings, gen_dataset seed 1,
every --binary-keys'th key with a binary name; --scale multiplies the count,
--value-size sets the bytes per value)
is loaded twice: into a standalone server, and into a source cluster of 3
masters (gen_dataset --slots, one run per master with its slot ranges; the
union is the standalone's data set, checked by digest). Every --runs times,
each system (--systems) copies it:

  sidecar           an rdma-server beside each source master (--source psync,
                    --transport tcp, or verbs) and one rdma-client --cluster
                    into an empty target cluster of --target-masters masters,
                    all started at once: wall time from the sidecars' start
                    to the client's exit (the snapshots included)
  sidecar-replicas  the same with each rdma-server beside its shard's replica
                    (the source cluster has 1 replica per master): the source
                    masters must not fork
  redis-cli-import  redis-cli --cluster import TARGET --cluster-from STANDALONE
                    --cluster-copy --cluster-replace (redis-cli copies from a
                    standalone server), into the same empty target cluster
  native-full       one native diskless full sync (repl-diskless-sync yes,
                    delay 0) of the standalone into one empty replica (swapdb)
  native-shards     each source master's native diskless full sync into an
                    empty standalone replica of its own, one at a time: their
                    sum and max

Every copy is checked: key count, the keyspace digest (DEBUG DIGEST of every
node, combined across nodes: see keyspace_digest) and a sample of keys,
binary names included, GET byte for byte against the standalone. Writes
bench/results/<date>-cluster-<host>[-tag].{md,csv}. See bench/README.md,
"Cluster copy".
"""
import argparse
import datetime
import hashlib
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from benchlib import (add_build_dir_arg, add_results_args, add_server_args, add_wait_quiet_arg,
                      built_binary, check_systems, cleanup_work, command_line, exited_unreaped,
                      key_value_table, load_dataset, reap, resolve_servers,
                      run_harness, share_sidecar_secret, write_csv, wrote_report, LOOPBACK,
                      REPO_DIR, BenchError, Disturbance, Procs, RedisServer, cpu_seconds,
                      free_port, kv_fields, master_idle, peak_rss_mb, replica_synced, tail,
                      wait_until)
import report

KEYS, VALUE_SIZE = 1_000_000, 1000  # the default data set of sync_bench (--value-size)
SYSTEMS = ["native-full", "native-shards", "sidecar", "sidecar-replicas", "redis-cli-import"]
SYSTEM_WHAT = {
    "sidecar": "an rdma-server (--source psync) beside each source master + one "
               "`rdma-client --cluster` into the target cluster; timed from the sidecars' start "
               "(snapshots included) to the client's exit",
    "sidecar-replicas": "the same, each rdma-server beside its shard's replica (no source "
                        "master forks)",
    "redis-cli-import": "`redis-cli --cluster import TARGET --cluster-from STANDALONE "
                        "--cluster-copy --cluster-replace` (SCAN + one MIGRATE per key) from "
                        "the standalone server into the target cluster",
    "native-full": "one native diskless full sync of the standalone (all keys; "
                   "repl-diskless-sync yes, delay 0) into one empty replica "
                   "(repl-diskless-load swapdb); REPLICAOF to link up and loaded",
    "native-shards": "each source master's native diskless full sync into an empty standalone "
                     "replica (swapdb) of its own, one shard at a time",
}
SOURCE_SHARDS = 3
QUIET = 0.15
OTHERS = 0.10
REPLICA_SWAPDB = ["--repl-diskless-load", "swapdb"]
CLUSTER_ARGS = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                # generous: a node forking 300+ MB on a busy 2-core box must not be
                # taken for failed
                "--cluster-node-timeout", "60000",
                "--cluster-allow-replica-migration", "no",
                "--cluster-replica-no-failover", "yes"]
SAMPLE = 200  # keys checked byte for byte per copy (half of them binary names, if any)


# ---- hash slots (proto/hash_slot.h) ------------------------------------------

def _crc16_table():
    table = []
    for i in range(256):
        c = i << 8
        for _ in range(8):
            c = ((c << 1) ^ 0x1021) if c & 0x8000 else c << 1
        table.append(c & 0xFFFF)
    return table


CRC16 = _crc16_table()


def hash_slot(key):
    """CRC-16/XMODEM of the key's hash tag (or the whole key) mod 16384."""
    s = key.find(b"{")
    if s >= 0:
        e = key.find(b"}", s + 1)
        if e > s + 1:
            key = key[s + 1:e]
    crc = 0
    for b in key:
        crc = ((crc << 8) & 0xFFFF) ^ CRC16[((crc >> 8) ^ b) & 0xFF]
    return crc % 16384


def split_slots(n):
    """n contiguous ranges covering 0-16383 as redis-cli --cluster create splits them."""
    per = 16384 / n
    return [(round(i * per), round((i + 1) * per) - 1) for i in range(n)]


def key_name(index, binary_every):
    """gen_dataset --type strings' name of key `index`."""
    if binary_every and index % binary_every == 0:
        return b"key:\x00\xff\r\n%010d" % index
    return b"key:%010d" % index


# DEBUG DIGEST of a non-empty node is C xor (xor of one SHA1 mix per key),
# where C = SHA1(SHA1(htonl(0))) mixes in DB 0's number (Redis debug.c,
# computeDatasetDigest); XOR is order-free, so xor-ing (digest xor C) over the
# non-empty nodes of a cluster gives one figure for its whole keyspace, equal
# for any layout holding the same keys and values: the standalone's included.
DB0 = hashlib.sha1(hashlib.sha1(b"\0\0\0\0").digest()).digest()


def keyspace_digest(nodes):
    out = bytes(20)
    for n in nodes:
        d = n.call("DEBUG", "DIGEST")
        d = bytes.fromhex(d.decode() if isinstance(d, bytes) else d)
        if d != bytes(20):
            out = bytes(a ^ b ^ c for a, b, c in zip(out, d, DB0))
    return out.hex()


# ---- a cluster of redis-server nodes -----------------------------------------

class Cluster:
    """`masters` masters owning split_slots(masters), each with `replicas`
    replicas, joined the way tests/support/redis_cluster.cc joins them: distinct
    config epochs, ADDSLOTSRANGE, MEET (bus ports named: port + 10000 can pass
    65535), REPLICATE, then every node sees every other and cluster_state:ok."""

    def __init__(self, procs, name, work, masters, replicas, server, timeout_s=120):
        self.name, self.slots = name, split_slots(masters)
        self.masters, self.replicas, self.bus = [], [], {}
        for i in range(masters * (1 + replicas)):
            role = f"m{i}" if i < masters else f"r{(i - masters) // replicas}"
            bus = free_port()
            node = RedisServer(procs, f"{name}-{role}-{i}", work, None,
                               CLUSTER_ARGS + ["--cluster-port", str(bus)], server).start()
            self.bus[node] = bus
            (self.masters if i < masters else self.replicas).append(node)
        self.nodes = self.masters + self.replicas
        self.ids = {n: self._text(n.call("CLUSTER", "MYID")) for n in self.nodes}
        for k, n in enumerate(self.nodes):
            n.call("CLUSTER", "SET-CONFIG-EPOCH", k + 1)
        for n, (lo, hi) in zip(self.masters, self.slots):
            n.call("CLUSTER", "ADDSLOTSRANGE", lo, hi)
        for n in self.nodes[1:]:
            self.nodes[0].call("CLUSTER", "MEET", LOOPBACK, n.port, self.bus[n])
        wait_until(f"{name}: every node to know every other", self._met, timeout_s)
        self.master_of = {}
        for j, r in enumerate(self.replicas):
            m = self.masters[j // replicas]
            r.call("CLUSTER", "REPLICATE", self.ids[m])
            self.master_of[r] = m
        wait_until(f"{name}: cluster_state:ok everywhere", self._ok, timeout_s)

    @staticmethod
    def _text(reply):
        return reply.decode() if isinstance(reply, bytes) else reply

    def _lines(self, n):
        return [ln.split() for ln in self._text(n.call("CLUSTER", "NODES")).splitlines() if ln]

    def _met(self):
        for n in self.nodes:
            lines = self._lines(n)
            if len(lines) != len(self.nodes) or any("handshake" in ln[2] for ln in lines):
                return False
        return True

    def _ok(self):
        for n in self.nodes:
            if "cluster_state:ok" not in self._text(n.call("CLUSTER", "INFO")):
                return False
            for ln in self._lines(n):
                if any(f in ln[2].split(",") for f in ("fail", "fail?", "noaddr", "handshake")) \
                        or ln[7] != "connected":
                    return False
        return all(replica_synced(r) for r in self.replicas)

    def node_for(self, key):
        s = hash_slot(key)
        for n, (lo, hi) in zip(self.masters, self.slots):
            if lo <= s <= hi:
                return n
        raise BenchError(f"slot {s} has no master")

    def dbsize(self):
        return sum(n.call("DBSIZE") for n in self.masters)

    def flush(self):
        for n in self.masters:
            n.call("FLUSHALL", "SYNC")

    def seed(self):
        return f"{LOOPBACK}:{self.masters[0].port}"

    def stop(self):
        for n in reversed(self.nodes):
            n.stop()


# ---- the benchmark -----------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", type=float, default=1.0,
                   help="multiply the key count (1,000,000 x 1000 B); 0.01 for a smoke run")
    p.add_argument("--value-size", type=int, default=VALUE_SIZE, metavar="B",
                   help="bytes per value (default 1000); e.g. --scale 10 --value-size 16 for "
                        "10M small values")
    p.add_argument("--systems", default="all",
                   help=f"comma-separated, from {', '.join(SYSTEMS)} (default: all)")
    p.add_argument("--target-masters", default="4",
                   help="masters of the target cluster, a list: one target cluster each "
                        "(default 4; e.g. 4,3)")
    p.add_argument("--runs", type=int, default=3, help="repetitions; median (min-max) reported")
    p.add_argument("--binary-keys", type=int, default=1000, metavar="K",
                   help="every K-th key has a binary name (NUL, 0xff, CR LF); 0: none "
                        "(default 1000)")
    p.add_argument("--transport", choices=("tcp", "verbs"), default="tcp",
                   help="rdma-server's and rdma-client's transport (default tcp)")
    p.add_argument("--device", default=os.environ.get("RRS_VERBS_DEVICE"),
                   help="RDMA device for --transport verbs (default $RRS_VERBS_DEVICE)")
    p.add_argument("--verbs-addr", default=os.environ.get("RRS_VERBS_ADDR"),
                   help="an address on that device's netdev (default $RRS_VERBS_ADDR; "
                        "found from --device when not given)")
    add_server_args(p)
    add_build_dir_arg(p)
    add_wait_quiet_arg(p, "copy", QUIET)
    p.add_argument("--rdbcompression", choices=("yes", "no"), default="yes",
                   help="the sources' rdbcompression (Redis' default: yes), for every system: "
                        "random values do not compress, so 'yes' only spends the fork "
                        "children's CPU on LZF attempts; 'no' adds -rdbcompression-no to the "
                        "results file name")
    p.add_argument("--huge-pages", choices=("auto", "on", "off"), default="auto",
                   help="rdma-server's and rdma-client's --huge-pages (default auto, theirs: "
                        "off in a VM whose balloon reports free pages to its host)")
    add_results_args(p)
    a = p.parse_args(argv)
    a.systems = SYSTEMS if a.systems == "all" else a.systems.split(",")
    check_systems(p, a.systems, SYSTEMS)
    a.systems = [s for s in SYSTEMS if s in a.systems]  # run order
    try:
        a.target_masters = [int(x) for x in a.target_masters.split(",")]
    except ValueError:
        p.error("--target-masters expects counts like 4 or 4,3")
    if min(a.target_masters) < 1 or a.runs < 1 or a.scale <= 0 or a.binary_keys < 0:
        p.error("--target-masters, --runs and --scale must be positive")
    if a.transport == "verbs":
        if a.device and not a.verbs_addr:
            from sync_bench import device_address
            a.verbs_addr = device_address(a.device)
        if not a.verbs_addr:
            p.error("--transport verbs needs --verbs-addr or --device (an address on the RDMA "
                    "device's netdev)")
    resolve_servers(p, a)
    return a


class Bench:
    def __init__(self, a):
        self.a = a
        for rel in ("bench/gen_dataset", "server/rdma-server", "client/rdma-client"):
            self.binary(rel)
        self.redis_cli = shutil.which("redis-cli")
        if "redis-cli-import" in a.systems and not self.redis_cli:
            raise BenchError("redis-cli-import needs redis-cli (Debian: redis-tools)")
        self.keys = max(1, int(KEYS * a.scale))
        self.payload = self.keys * a.value_size
        self.procs = Procs()
        self.work = tempfile.mkdtemp(prefix="cluster_bench.")
        self.rows = []        # one dict per copy
        self.loads = []       # (what, seconds, detail)
        self.checks = []      # what each verification found, for the report
        self.quiet = Disturbance(a.wait_quiet, QUIET, OTHERS, "copy")
        self.loadavg_start = report.loadavg()
        self.host = a.verbs_addr if a.transport == "verbs" else LOOPBACK
        self.standalone = self.source = None
        self.targets = {}

    def binary(self, rel):
        return built_binary(self.a.build_dir, rel,
                            f"build it: cmake -S {REPO_DIR} -B {self.a.build_dir} -G Ninja "
                            f"-DCMAKE_BUILD_TYPE=Release && cmake --build {self.a.build_dir}")

    def timeout_s(self, slow=1.0):
        return 300 + slow * self.payload / 2e6  # 2 MB/s: far below any path

    # ---- setup ---------------------------------------------------------

    def gen(self, node, slots=None):
        extra = ["--binary-keys", str(self.a.binary_keys)]
        if slots:
            extra += ["--slots", f"{slots[0]}-{slots[1]}"]
        return load_dataset(self.procs, self.binary("bench/gen_dataset"), node.port, self.keys,
                            self.a.value_size, timeout_s=self.timeout_s(), extra_args=extra)

    def setup(self):
        a = self.a
        self.standalone = RedisServer(self.procs, "standalone", self.work, None,
                                      ("--rdbcompression", a.rdbcompression), a.server).start()
        wall, detail = self.gen(self.standalone)
        self.loads.append(("the standalone server", wall, detail))
        n = self.standalone.call("DBSIZE")
        if n != self.keys:
            raise BenchError(f"the standalone has {n} keys, expected {self.keys}")
        self.digest = keyspace_digest([self.standalone])
        print(f"standalone (port {self.standalone.port}) loaded in {wall:.1f} s: {detail}",
              flush=True)
        if {"sidecar", "sidecar-replicas", "native-shards"} & set(a.systems):
            replicas = 1 if "sidecar-replicas" in a.systems else 0
            self.source = Cluster(self.procs, "source", self.work, SOURCE_SHARDS, replicas,
                                  a.server, self.timeout_s())
            t0 = time.monotonic()
            for m, slots in zip(self.source.masters, self.source.slots):
                wall, detail = self.gen(m, slots)
                self.loads.append((f"source master {m.port} (slots {slots[0]}-{slots[1]})",
                                   wall, detail))
            # the replicas have it once they hold as many keys as their masters
            wait_until("the source replicas to catch up", lambda: all(
                r.call("DBSIZE") == self.source.master_of[r].call("DBSIZE")
                for r in self.source.replicas), self.timeout_s())
            n = self.source.dbsize()
            if n != self.keys or keyspace_digest(self.source.masters) != self.digest:
                raise BenchError(f"the source cluster holds {n} keys, or other bytes, than the "
                                 f"standalone ({self.keys}): gen_dataset --slots is broken")
            print(f"source cluster: {SOURCE_SHARDS} masters, {replicas} replica(s) each, "
                  f"loaded in {time.monotonic() - t0:.1f} s; same keyspace digest as the "
                  f"standalone", flush=True)
            for n in self.source.nodes:  # the sidecar's PSYNC: fork at once
                n.call("CONFIG", "SET", "rdbcompression", a.rdbcompression)
                n.call("CONFIG", "SET", "repl-diskless-sync", "yes")
                n.call("CONFIG", "SET", "repl-diskless-sync-delay", "0")
        if {"sidecar", "sidecar-replicas", "redis-cli-import"} & set(a.systems):
            for m in a.target_masters:
                self.targets[m] = Cluster(self.procs, f"target{m}", self.work, m, 0, a.server,
                                          self.timeout_s())
                print(f"target cluster of {m} masters up", flush=True)

    # ---- measuring -----------------------------------------------------

    def verify(self, target, what, strict=True):
        """Key count, keyspace digest, and SAMPLE keys GET byte for byte (half
        of them binary names). strict: a difference stops the run; else it is
        recorded and reported (redis-cli import loses the keys whose names hold
        a NUL: it reports them migrated)."""
        n = target.dbsize()
        digest_ok = keyspace_digest(target.masters) == self.digest
        idx = set(range(0, self.keys, max(1, self.keys // (SAMPLE // 2))))
        if self.a.binary_keys:
            idx |= set(range(0, self.keys, self.a.binary_keys)[:SAMPLE // 2])
        binary = bad = bad_binary = 0
        for i in sorted(idx):
            k = key_name(i, self.a.binary_keys)
            is_binary = k != b"key:%010d" % i
            binary += is_binary
            v = target.node_for(k).call("GET", k)
            if v is None or v != self.standalone.call("GET", k):
                bad += 1
                bad_binary += is_binary
        problems = []
        if n != self.keys:
            problems.append(f"{self.keys - n:,} keys missing")
        if not digest_ok:
            problems.append("keyspace digest differs")
        if bad:
            problems.append(f"{bad} sampled keys missing or different ({bad_binary} of them "
                            "binary names)")
        if problems and strict:
            raise BenchError(f"{what}: " + "; ".join(problems))
        self.checks.append((what, n, len(idx), binary, "; ".join(problems) or "all equal"))
        return {"verified_keys": n, "sampled": len(idx), "sampled_binary": binary,
                "missing_keys": self.keys - n, "sampled_bad": bad}

    def forks(self, nodes):
        return sum(int(n.info("stats")["total_forks"]) for n in nodes)

    def cpu(self, nodes):
        return sum(cpu_seconds(n.proc.pid) for n in nodes)

    def wait_no_fork(self, nodes):
        wait_until("the source nodes' fork children to be reaped", lambda: all(
            n.info("persistence")["rdb_bgsave_in_progress"] == "0" for n in nodes),
            self.timeout_s())

    # ---- systems -------------------------------------------------------

    def sidecar(self, system, masters, run):
        target = self.targets[masters]
        target.flush()
        src = self.source
        beside = src.replicas if system == "sidecar-replicas" else src.masters
        self.wait_no_fork(src.nodes)
        busy = self.quiet.before()
        forks0 = self.forks(src.masters)
        rforks0 = self.forks(src.replicas)
        mcpu0, rcpu0 = self.cpu(src.masters), self.cpu(src.replicas)
        tcpu0 = self.cpu(target.masters)
        servers, ports = [], []
        tag = f"{system}-{masters}-{run}"
        t0 = time.monotonic()
        for i, node in enumerate(beside):
            port = free_port()
            out = open(os.path.join(self.work, f"{tag}-server{i}.log"), "w")
            err = open(os.path.join(self.work, f"{tag}-server{i}.stderr"), "w")
            argv = [self.binary("server/rdma-server"), "--snapshot-at-start",
                    "--redis", f"{LOOPBACK}:{node.port}",
                    "--listen", self.host, "--port", str(port), "--source", "psync",
                    "--transport", self.a.transport, "--huge-pages", self.a.huge_pages]
            servers.append((self.procs.start(f"rdma-server{i}", argv, stdout=out, stderr=err),
                            out.name, err.name))
            ports.append(port)
        clog = os.path.join(self.work, f"{tag}-client.log")
        argv = [self.binary("client/rdma-client"), "--cluster"] + \
            [f"{self.host}:{p}" for p in ports] + \
            ["--redis", target.seed(), "--transport", self.a.transport,
             "--huge-pages", self.a.huge_pages,
             "--connect-timeout", str(int(self.timeout_s())), "--quiet"]
        with open(clog, "w") as err:
            client = self.procs.start("rdma-client", argv, stdout=subprocess.PIPE, stderr=err,
                                      text=True)
        ready_at = [None] * len(servers)
        ready = [None] * len(servers)

        def progress():
            for i, (p, out, err) in enumerate(servers):
                if ready_at[i] is None:
                    with open(out, errors="replace") as f:
                        for ln in f:
                            if ln.startswith("ready ") and ln.endswith("\n"):
                                ready_at[i], ready[i] = time.monotonic() - t0, ln.strip()
                    if ready_at[i] is None and p.poll() is not None:
                        raise BenchError(f"rdma-server {i} exited {p.returncode}:\n"
                                         f"{tail(err)}")

        # poll() would reap the client; peek at it with waitid(WNOWAIT) instead,
        # so that reap() gets its own rusage
        def exited():
            progress()
            return exited_unreaped(client)
        wait_until(f"{system}: rdma-client --cluster", exited, self.timeout_s(3), poll_s=0.005)
        wall = time.monotonic() - t0
        client_cpu, client_rss = reap(client)
        others = self.quiet.during()
        out = client.stdout.read()
        client.stdout.close()
        if client.returncode != 0:
            raise BenchError(f"rdma-client --cluster exited {client.returncode}:\n{out}"
                             f"{tail(clog)}")
        progress()
        if None in ready:
            raise BenchError(f"a sidecar printed no ready line: {ready}")
        self.wait_no_fork(src.nodes)  # its CPU is in its master's once it is reaped
        sidecar_cpu = sum(cpu_seconds(p.pid, children=False) for p, _, _ in servers)
        sidecar_rss = max(peak_rss_mb(p.pid) or 0 for p, _, _ in servers)
        row = {"system": system, "target_masters": masters, "run": run + 1, "wall_s": wall,
               "busy_before": busy, "others_cores": others,
               "source_master_forks": self.forks(src.masters) - forks0,
               "source_replica_forks": self.forks(src.replicas) - rforks0,
               "source_masters_cpu_s": self.cpu(src.masters) - mcpu0,
               "source_replicas_cpu_s": self.cpu(src.replicas) - rcpu0,
               "sidecars_cpu_s": sidecar_cpu, "sidecar_peak_rss_mb": sidecar_rss,
               "client_cpu_s": client_cpu, "client_peak_rss_mb": client_rss,
               "targets_cpu_s": self.cpu(target.masters) - tcpu0}
        for p, _, _ in servers:
            self.procs.stop(p)
        builds = [float(kv_fields(r).get("build_s", "nan")) for r in ready]
        row["build_s_max"] = max(builds)
        row["build_s"] = " ".join(f"{b:.3f}" for b in builds)
        row["ready_s_max"] = max(ready_at)
        shards = [kv_fields(ln) for ln in out.splitlines() if ln.startswith("synced ")]
        total = [kv_fields(ln) for ln in out.splitlines() if ln.startswith("cluster-synced ")]
        if len(shards) != SOURCE_SHARDS or not total:
            raise BenchError(f"rdma-client printed no synced/cluster-synced lines:\n{out}")
        total = total[-1]
        if int(total["keys"]) != self.keys or int(total["failed"]) != 0:
            raise BenchError(f"rdma-client: {total}")
        row["client_s"] = float(total["seconds"])
        row["transfer_s_max"] = max(float(s["transfer_s"]) for s in shards)
        row["shard_s_max"] = max(float(s["seconds"]) for s in shards)
        row["load_after_ready_s"] = wall - row["ready_s_max"]
        row["per_master"] = total["per_master"]
        for s in shards:
            if int(s.get("moved", 0)) or int(s.get("asked", 0)):
                print(f"  note: shard {s.get('source')} was redirected: {s}", flush=True)
        row.update(self.verify(target, f"{system} into {masters} masters, run {run + 1}"))
        self.add(row)

    def redis_cli_import(self, masters, run):
        target = self.targets[masters]
        target.flush()
        busy = self.quiet.before()
        cpu0 = cpu_seconds(self.standalone.proc.pid)
        tcpu0 = self.cpu(target.masters)
        argv = [self.redis_cli, "--cluster", "import", target.seed(), "--cluster-from",
                f"{LOOPBACK}:{self.standalone.port}", "--cluster-copy", "--cluster-replace"]
        log = os.path.join(self.work, f"import-{masters}-{run}.log")
        t0 = time.monotonic()
        with open(log, "w") as out:
            p = self.procs.start("redis-cli", argv, stdout=out, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL)
        wait_until("redis-cli --cluster import", lambda: exited_unreaped(p),
                   self.timeout_s(60))
        wall = time.monotonic() - t0
        cli_cpu, cli_rss = reap(p)
        others = self.quiet.during()
        if p.returncode != 0:
            raise BenchError(f"redis-cli --cluster import exited {p.returncode}:\n{tail(log)}")
        row = {"system": "redis-cli-import", "target_masters": masters, "run": run + 1,
               "wall_s": wall, "busy_before": busy, "others_cores": others,
               "source_masters_cpu_s": cpu_seconds(self.standalone.proc.pid) - cpu0,
               "client_cpu_s": cli_cpu, "client_peak_rss_mb": cli_rss,
               "targets_cpu_s": self.cpu(target.masters) - tcpu0}
        row.update(self.verify(target, f"redis-cli import into {masters} masters, "
                                       f"run {run + 1}", strict=False))
        self.add(row)

    def native_sync(self, master, name):
        """One native diskless full sync of `master` into a fresh empty replica
        (as sync_bench's native-diskless, delay 0): (wall s, master CPU s,
        replica CPU s, busy, others)."""
        wait_until("the master to be idle", lambda: master_idle(master, replicas_allowed=len(
            [r for r in (self.source.replicas if self.source else []) if
             self.source.master_of[r] is master])), self.timeout_s())
        for k, v in (("repl-diskless-sync", "yes"), ("repl-diskless-sync-delay", "0"),
                     ("repl-diskless-sync-max-replicas", "0")):
            master.call("CONFIG", "SET", k, v)
        replica = RedisServer(self.procs, name, self.work, None, REPLICA_SWAPDB,
                              self.a.server).start()
        try:
            busy = self.quiet.before()
            cpu0 = cpu_seconds(master.proc.pid)
            t0 = time.monotonic()
            replica.call("REPLICAOF", LOOPBACK, master.port)
            t1 = wait_until(f"{name} full sync", lambda: replica_synced(replica),
                            self.timeout_s())
            others = self.quiet.during()
            rcpu = cpu_seconds(replica.proc.pid, children=False)
            replica.call("REPLICAOF", "NO", "ONE")
            wait_until("the master's fork child to be reaped", lambda: master.info(
                "persistence")["rdb_bgsave_in_progress"] == "0", self.timeout_s())
            mcpu = cpu_seconds(master.proc.pid) - cpu0
            if replica.call("DBSIZE") != master.call("DBSIZE") or \
                    replica.call("DEBUG", "DIGEST") != master.call("DEBUG", "DIGEST"):
                raise BenchError(f"{name}: the replica's keys differ from its master's")
            return t1 - t0, mcpu, rcpu, busy, others, replica.call("DBSIZE")
        finally:
            replica.stop()

    def native_full(self, run):
        wall, mcpu, rcpu, busy, others, n = self.native_sync(self.standalone, f"native{run}")
        self.checks.append((f"native-full run {run + 1}", n, 0, 0, "all equal"))
        self.add({"system": "native-full", "run": run + 1, "wall_s": wall, "busy_before": busy,
                  "others_cores": others, "source_masters_cpu_s": mcpu,
                  "replica_cpu_s": rcpu, "verified_keys": n})

    def native_shards(self, run):
        res = [self.native_sync(m, f"shard{i}-native{run}")
               for i, m in enumerate(self.source.masters)]
        walls = [r[0] for r in res]
        n = sum(r[5] for r in res)
        if n != self.keys:
            raise BenchError(f"native-shards: the replicas hold {n} keys, not {self.keys}")
        self.checks.append((f"native-shards run {run + 1}", n, 0, 0, "all equal"))
        self.add({"system": "native-shards", "run": run + 1, "wall_s": sum(walls),
                  "shard_s_max": max(walls), "shard_walls": " ".join(f"{w:.3f}" for w in walls),
                  "busy_before": max(r[3] for r in res), "others_cores": max(r[4] for r in res),
                  "source_masters_cpu_s": sum(r[1] for r in res),
                  "replica_cpu_s": sum(r[2] for r in res), "verified_keys": n})

    def add(self, row):
        row.setdefault("target_masters", "")
        row["keys"] = self.keys
        row["keys_per_s"] = self.keys / row["wall_s"]
        row["MBps"] = self.payload / 1e6 / row["wall_s"]
        self.rows.append(row)
        extra = ""
        if "source_master_forks" in row:
            extra = f"; source master forks +{row['source_master_forks']}"
        where = f" -> {row['target_masters']} masters" if row["target_masters"] else ""
        print(f"  run {row['run']} {row['system']}{where}: {row['wall_s']:.2f} s "
              f"({row['keys_per_s']:,.0f} keys/s){extra}", flush=True)

    def run(self):
        print(f"server: {self.a.server.describe()} {self.a.server.binary}; data set "
              f"{self.keys:,} keys x {self.a.value_size} B; systems {','.join(self.a.systems)}; "
              f"target masters {self.a.target_masters}", flush=True)
        self.setup()
        for run in range(self.a.runs):
            for system in self.a.systems:
                if system == "native-full":
                    self.native_full(run)
                elif system == "native-shards":
                    self.native_shards(run)
                else:
                    for m in self.a.target_masters:
                        if system == "redis-cli-import":
                            self.redis_cli_import(m, run)
                        else:
                            self.sidecar(system, m, run)

    def cleanup(self, ok):
        cleanup_work(self.procs, self.work, keep=not ok)


# ---- the report --------------------------------------------------------------

CSV_FIELDS = ["system", "target_masters", "run", "keys", "wall_s", "keys_per_s", "MBps",
              "client_s", "ready_s_max", "build_s_max", "build_s", "transfer_s_max",
              "shard_s_max", "load_after_ready_s", "shard_walls", "per_master",
              "source_master_forks", "source_replica_forks", "source_masters_cpu_s",
              "source_replicas_cpu_s", "sidecars_cpu_s", "sidecar_peak_rss_mb", "client_cpu_s",
              "client_peak_rss_mb", "targets_cpu_s", "replica_cpu_s", "verified_keys", "missing_keys", "sampled",
              "sampled_binary", "sampled_bad", "busy_before", "others_cores"]


def med(rows, field):
    return report.stats([r.get(field) for r in rows])


def fmt(s, digits=2):
    return report.fmt(s, digits)


def group(rows, system, masters=""):
    return [r for r in rows if r["system"] == system and r["target_masters"] == masters]


def per_master_rates(rows):
    """{node: (keys, [keys/s over the client's seconds per run])}"""
    out = {}
    for r in rows:
        for item in r["per_master"].split(","):
            node, n = item.rsplit("/", 1)
            keys, rates = out.setdefault(node, (int(n), []))
            rates.append(int(n) / r["client_s"])
    return out


def write_report(a, bench, command, date, host):
    os.makedirs(a.results_dir, exist_ok=True)
    stem = os.path.join(a.results_dir, f"{date}-cluster-{host}" +
                        (f"-{a.server.name}" if a.server.name != "redis-7.0" else "") +
                        ("-rdbcompression-no" if a.rdbcompression == "no" else "") +
                        (f"-{a.tag}" if a.tag else ""))
    rows = bench.rows
    write_csv(stem + ".csv", CSV_FIELDS, rows)
    L = [f"# Whole-cluster copy: rdma-client --cluster vs redis-cli --cluster import vs native "
         f"full syncs, on {host}, {date}\n", f"Command: `{command}`\n", "## Machine\n"]
    L += key_value_table(report.machine(REPO_DIR, report.servers_of(a)))
    L += ["", "## Data set\n",
          f"{bench.keys:,} keys x {a.value_size:,} random bytes, strings (gen_dataset seed 1) = "
          f"{bench.payload / 1e6:,.0f} MB of values; "
          + (f"every {a.binary_keys:,}th key ({len(range(0, bench.keys, a.binary_keys)):,} keys) "
             "has a binary name, `key:\\0\\xff\\r\\n<10 digits>`." if a.binary_keys
             else "no binary key names (--binary-keys 0).")]
    L += [f"- loading {what}: {s:.1f} s (`{d}`)" for what, s, d in bench.loads]
    L += ["", f"Source cluster: {SOURCE_SHARDS} masters owning "
          f"{', '.join(f'{lo}-{hi}' for lo, hi in split_slots(SOURCE_SHARDS))}"
          + (", 1 replica each" if "sidecar-replicas" in a.systems else ", no replicas")
          + "; each loaded with `gen_dataset --slots` of its range; the union's keyspace digest "
          "equals the standalone's. Target clusters: "
          + (", ".join(f"{m} masters ({', '.join(f'{lo}-{hi}' for lo, hi in split_slots(m))})"
                       for m in a.target_masters)) + ", no replicas, flushed before each copy. "
          f"Every node: `{shlex.join(RedisServer.BASE_ARGS)}` plus "
          f"`{shlex.join(CLUSTER_ARGS)}` for cluster nodes; all on loopback, "
          f"sidecar transport {a.transport}, `--huge-pages {a.huge_pages}`; the standalone and every source node "
          f"`rdbcompression {a.rdbcompression}`"
          + (f" ({a.verbs_addr})" if a.transport == "verbs" else "") + ". Nothing pinned.\n",
          "## Systems\n"]
    L += [f"- **{s}**: {SYSTEM_WHAT[s]}" for s in a.systems]
    noisy = sum(1 for r in rows if r.get("others_cores", 0) > OTHERS)
    L += ["", "## Quiet?\n", f"Load average at start {bench.loadavg_start}, at end "
          f"{report.loadavg()}. Copies that started with the machine over {QUIET:.0%} busy: "
          f"{bench.quiet.disturbed}; during which other processes used over {OTHERS} cores: "
          f"{noisy} (`busy_before`, `others_cores` in the CSV).\n"]
    L += ["## Wall time\n", "CLOCK_MONOTONIC; median (min-max) over runs. sidecar: from "
          "starting the 3 rdma-servers (and the client, which waits for their tables) to the "
          "client's exit; `client s` is its own `seconds=`. redis-cli: its run. native: "
          "REPLICAOF until `master_link_status:up` and loaded; native-shards: the sum of the 3 "
          "syncs (one at a time), max in its own column.\n",
          "| system | target masters | runs | wall s | client s | keys/s | MB/s |",
          "|---|---:|---:|---|---|---|---|"]
    combos = [(s, "") for s in a.systems if s.startswith("native")] + \
        [(s, m) for s in a.systems if not s.startswith("native") for m in a.target_masters]
    for s, m in combos:
        g = group(rows, s, m)
        if g:
            L.append(f"| {s} | {m or '-'} | {len(g)} | {fmt(med(g, 'wall_s'))} | "
                     f"{fmt(med(g, 'client_s'))} | {fmt(med(g, 'keys_per_s'), 0)} | "
                     f"{fmt(med(g, 'MBps'), 1)} |")
    ns = group(rows, "native-shards")
    if ns:
        L.append(f"\nnative-shards: sum {fmt(med(ns, 'wall_s'))} s, slowest shard "
                 f"{fmt(med(ns, 'shard_s_max'))} s.")
    L += ["", "## Ratios (of medians)\n"]
    nf = med(group(rows, "native-full"), "wall_s")
    for m in a.target_masters:
        for s in ("sidecar", "sidecar-replicas"):
            sc = med(group(rows, s, m), "wall_s")
            if not sc:
                continue
            if nf:
                x = sc[0] / nf[0]
                L.append(f"- {s} -> {m} masters / one native full sync: **{x:.2f}x** "
                         f"(target <= 1.0x: {'met' if x <= 1.0 else 'missed'})")
            imp = med(group(rows, "redis-cli-import", m), "wall_s")
            if imp:
                x = imp[0] / sc[0]
                L.append(f"- redis-cli import's time / {s} -> {m} masters': **{x:.1f}x** "
                         f"(target >= 15x: {'met' if x >= 15 else 'missed'})")
            if ns:
                L.append(f"- {s} -> {m} masters / native shard syncs: "
                         f"{sc[0] / med(ns, 'wall_s')[0]:.2f}x their sum, "
                         f"{sc[0] / med(ns, 'shard_s_max')[0]:.2f}x the slowest")
    sc_rows = [r for r in rows if r["system"].startswith("sidecar")]
    if sc_rows:
        L += ["", "## Where the sidecar's time goes\n",
              "`ready` is when the last rdma-server printed its ready line (its snapshot and "
              "table built; `build_s`, the slowest of the 3, is rdma-server's own figure); "
              "`transfer` the slowest shard's `transfer_s` (client start to its last table "
              "byte read), `shard s` the slowest shard's `seconds=`; `after ready` is the wall "
              "time left once every table was ready: the load.\n",
              "| system | target masters | wall s | build_s (slowest) | last ready s | "
              "transfer s | shard s | after ready s |", "|---|---:|---|---|---|---|---|---|"]
        for s, m in combos:
            g = group(rows, s, m)
            if g and s.startswith("sidecar"):
                L.append(f"| {s} | {m} | {fmt(med(g, 'wall_s'))} | {fmt(med(g, 'build_s_max'))} "
                         f"| {fmt(med(g, 'ready_s_max'))} | {fmt(med(g, 'transfer_s_max'))} | "
                         f"{fmt(med(g, 'shard_s_max'))} | {fmt(med(g, 'load_after_ready_s'))} |")
        L += ["", "## Keys per target master (sidecar)\n",
              "keys/s over the client's `seconds=` (median over runs).\n",
              "| system | target masters | target master | keys | share | keys/s |",
              "|---|---:|---|---:|---:|---|"]
        for s, m in combos:
            g = group(rows, s, m)
            if g and s.startswith("sidecar"):
                for node, (n, rates) in sorted(per_master_rates(g).items()):
                    L.append(f"| {s} | {m} | {node} | {n:,} | {n / bench.keys:.1%} | "
                             f"{fmt(report.stats(rates), 0)} |")
    L += ["", "## Cost\n", "CPU s is user+system over the copy; source masters' includes their "
          "reaped fork children (redis-cli: the standalone source, which runs the MIGRATEs); "
          "forks are the source masters' `total_forks` growth (the replicas' in brackets). "
          "Client: rdma-client or redis-cli, its own rusage; peak RSS is VmHWM / ru_maxrss. Target "
          "masters: the target cluster's masters over the copy (the writes received: SET or "
          "RESTORE per key, or MIGRATEs).\n",
          "| system | target masters | source master forks | source masters CPU s | "
          "source replicas CPU s | sidecars CPU s | sidecar peak RSS MiB | client CPU s | "
          "client peak RSS MiB | target masters CPU s | replica(s) CPU s |",
          "|---|---:|---|---|---|---|---|---|---|---|---|"]
    for s, m in combos:
        g = group(rows, s, m)
        if not g:
            continue
        forks = "-"
        if "source_master_forks" in g[0]:
            forks = (f"{'/'.join(str(r['source_master_forks']) for r in g)} "
                     f"({'/'.join(str(r['source_replica_forks']) for r in g)})")
        L.append(f"| {s} | {m or '-'} | {forks} | {fmt(med(g, 'source_masters_cpu_s'))} | "
                 f"{fmt(med(g, 'source_replicas_cpu_s'))} | {fmt(med(g, 'sidecars_cpu_s'))} | "
                 f"{fmt(med(g, 'sidecar_peak_rss_mb'), 0)} | {fmt(med(g, 'client_cpu_s'))} | "
                 f"{fmt(med(g, 'client_peak_rss_mb'), 0)} | {fmt(med(g, 'targets_cpu_s'))} | "
                 f"{fmt(med(g, 'replica_cpu_s'))} |")
    rep = [r for r in rows if r["system"] == "sidecar-replicas"]
    if rep:
        moved = sum(r["source_master_forks"] for r in rep)
        L.append(f"\nsidecar-replicas: the source masters forked {moved} times over "
                 f"{len(rep)} copies ({'unchanged, as required' if moved == 0 else 'NOT zero'}).")
    L += ["", "## Every key arrived\n", "Each copy: the target's key count (DBSIZE summed over "
          "its masters) equals the source's; its keyspace digest (every master's DEBUG DIGEST, "
          "combined: `keyspace_digest` in cluster_bench.py) equals the standalone's, so every "
          "key and value is there; and sampled keys, binary names included, GET from the "
          "master owning their slot equal the standalone's byte for byte. Native syncs: DBSIZE "
          "and DEBUG DIGEST equal the master's.\n",
          "| copy | keys on the target | sampled | of them binary names | result |",
          "|---|---:|---:|---:|---|"]
    L += [f"| {w} | {n:,} | {s} | {b} | {r} |" for w, n, s, b, r in bench.checks]
    lost = [r for r in rows if r.get("missing_keys")]
    if lost:
        L.append(f"\n**Keys lost**: " + "; ".join(
            f"{r['system']} run {r['run']} -> {r['target_masters']} masters: "
            f"{r['missing_keys']:,} keys" for r in lost) + ". redis-cli 7.0's import "
            "passes key names as C strings: a name with a NUL is cut there (its log says "
            "`Migrating key: to ...: OK` and MIGRATE finds no such key), so every "
            "binary name with a NUL is lost, silently (exit 0).")
    with open(stem + ".md", "w") as f:
        f.write("\n".join(L) + "\n")
    return stem


def main(argv):
    share_sidecar_secret()
    a = parse_args(argv)
    command = command_line(__file__, argv)
    bench, ok = run_harness("cluster_bench", lambda: Bench(a))
    if bench is None:
        return 2
    if not bench.rows:
        return 1
    stem = write_report(a, bench, command, datetime.date.today().isoformat(),
                        socket.gethostname())
    return wrote_report("cluster_bench", stem, ok)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
