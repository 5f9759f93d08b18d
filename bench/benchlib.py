"""Plumbing for the benchmarks (sync_bench.py, build_bench.py, lag_bench.py): a
tiny RESP client, a registry that stops every process it started, the server
versions tests/servers.sh knows (--server), a redis-server or valkey-server
on a free loopback port, replication-state predicates, gen_dataset,
rdma-server up to its `ready` line, and /proc CPU time and peak RSS.

Standard library only. Every wall time in the benchmarks is time.monotonic()
(CLOCK_MONOTONIC): never CPU time.
"""
import atexit
import csv
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time

LOOPBACK = "127.0.0.1"
POLL_S = 0.010  # how often a wait loop looks again
BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_DIR = os.path.dirname(BENCH_DIR)
SERVERS_SH = os.path.join(REPO_DIR, "tests", "servers.sh")
DEFAULT_SERVER = "redis-7.0"  # Debian 12's redis-server: what the benchmarks always ran


class BenchError(Exception):
    """A step of the benchmark failed; the message says which and why."""


class Refused(BenchError):
    """The target server cannot take the master's data (rdma-client exit 5, or a
    replica that cannot load the master's RDB version): the pair is reported as
    refused, not measured."""


class RespError(BenchError):
    """Redis answered with an error reply."""


class Resp:
    """A blocking RESP2 client: call(*args) sends one command, returns its reply.

    Replies map to Python as: +status -> str, :n -> int, $bulk -> bytes,
    $-1 -> None, *array -> list; -error raises RespError.
    """

    def __init__(self, port, host=LOOPBACK, timeout=30.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.rfile = self.sock.makefile("rb")

    def close(self):
        self.rfile.close()
        self.sock.close()

    def call(self, *args, timeout=None):
        """`timeout`: seconds for this reply only (a DEBUG DIGEST of ten million
        keys takes longer than the connection's 30)."""
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            b = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(b), b))
        before = self.sock.gettimeout()
        if timeout is not None:
            self.sock.settimeout(timeout)
        try:
            self.sock.sendall(b"".join(out))
            return self._reply()
        finally:
            self.sock.settimeout(before)

    def _reply(self):
        line = self.rfile.readline()
        if not line.endswith(b"\r\n"):
            raise BenchError("redis closed the connection")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RespError(rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.rfile.read(n + 2)
            return data[:-2]
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        raise BenchError(f"bad RESP line {line[:40]!r}")

    def info(self, section):
        """INFO <section> as a dict of str -> str."""
        text = self.call("INFO", section).decode()
        fields = {}
        for ln in text.splitlines():
            if ln and not ln.startswith("#") and ":" in ln:
                k, v = ln.split(":", 1)
                fields[k] = v
        return fields


class ServerBinary:
    """One server version of `bash tests/servers.sh list`: its NAME (engine-major.minor,
    e.g. valkey-9.1), BINARY and VERSION (what the binary reports)."""

    def __init__(self, name, binary, version):
        self.name, self.binary, self.version = name, binary, version
        self.engine = name.split("-", 1)[0]  # redis | valkey

    def describe(self):
        """`valkey-9.1 (Valkey 9.1.2)`"""
        return f"{self.name} ({self.engine.capitalize()} {self.version})"

    def version_line(self):
        """The first line of `BINARY --version` (with its sha and build), or '?'."""
        try:
            out = subprocess.run([self.binary, "--version"], capture_output=True, text=True,
                                 timeout=10).stdout
        except (OSError, subprocess.TimeoutExpired):
            return "?"
        return out.strip().splitlines()[0] if out.strip() else "?"

    def __eq__(self, other):
        return isinstance(other, ServerBinary) and self.binary == other.binary

    def __hash__(self):
        return hash(self.binary)


def find_server(name):
    """The ServerBinary called `name` in `bash tests/servers.sh list`, or a
    BenchError naming what is there and `bash tests/servers.sh install`."""
    try:
        p = subprocess.run(["bash", SERVERS_SH, "list"], capture_output=True, text=True,
                           timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise BenchError(f"bash {SERVERS_SH} list failed: {e}")
    found = {}
    for ln in p.stdout.splitlines():
        parts = ln.split()
        if len(parts) >= 3:
            found[parts[0]] = ServerBinary(parts[0], " ".join(parts[1:-1]), parts[-1])
    if name in found:
        return found[name]
    missing = "".join(f"\n  {ln}" for ln in p.stderr.strip().splitlines())
    raise BenchError(
        f"server {name!r} is not installed: `bash tests/servers.sh list` finds "
        f"{', '.join(found) or 'none'}" + (f"; it says:{missing}" if missing else "") +
        "\nrun: bash tests/servers.sh install (it installs or builds redis-7.0, valkey-8.0, "
        "redis-8.0 and valkey-9.1; bash tests/servers.sh --help)")


def add_server_args(p, target=False):
    """--server NAME (and, with target, --target-server NAME) for a harness's parser."""
    p.add_argument("--server", default=DEFAULT_SERVER, metavar="NAME",
                   help=f"the server version to run, a NAME from `bash tests/servers.sh list` "
                        f"(redis-7.0, valkey-8.0, redis-8.0, valkey-9.1; default "
                        f"{DEFAULT_SERVER}); `bash tests/servers.sh install` installs them")
    if target:
        p.add_argument("--target-server", default=None, metavar="NAME",
                       help="the server version of every replica, sidecar target and the "
                            "floor's replica (default: --server); the master runs --server. "
                            "A pair the sidecar refuses (rdma-client exit 5) or the target "
                            "cannot load natively is reported as refused, not measured")


def servers_tag(server, target=None):
    """The results file name's part for the servers: '' for the default, so its
    results keep the names they had before --server; else `-valkey-9.1` or
    `-redis-7.0-to-valkey-9.1`."""
    if target is not None and target != server:
        return f"-{server.name}-to-{target.name}"
    return "" if server.name == DEFAULT_SERVER else f"-{server.name}"


def resolve_servers(p, a):
    """Replaces a.server (and a.target_server, if the parser has it) by its
    ServerBinary; a name that is not installed is a usage error."""
    try:
        a.server = find_server(a.server)
        if hasattr(a, "target_server"):
            a.target_server = (a.server if a.target_server in (None, a.server.name)
                               else find_server(a.target_server))
    except BenchError as e:
        p.error(str(e))


def repo_path(path):
    """A path relative to the repo root, whatever the working directory."""
    return path if os.path.isabs(path) else os.path.join(REPO_DIR, path)


def add_build_dir_arg(p):
    """--build-dir, already absolute once parsed (argparse converts its default too)."""
    p.add_argument("--build-dir", default="build", type=repo_path,
                   help="CMake build tree, relative to the repo root unless absolute")


def add_wait_quiet_arg(p, what, quiet):
    """--wait-quiet S: how long to wait before each `what` for the machine to be
    under `quiet` busy (a fraction)."""
    p.add_argument("--wait-quiet", type=float, default=0, metavar="S",
                   help=f"before each {what} wait up to S s for the machine to be under "
                        f"{quiet * 100:.0f}%% busy (default: only record how busy)")


def add_results_args(p):
    """--results-dir and --tag: where the report goes and what its name ends with."""
    p.add_argument("--results-dir", default=os.path.join(BENCH_DIR, "results"))
    p.add_argument("--tag", default="", help="appended to the results file name")


def check_systems(p, systems, known):
    """A usage error for the first of `systems` that is not in `known`."""
    for s in systems:
        if s not in known:
            p.error(f"--systems: unknown system {s!r}; choose from {', '.join(known)}")


def command_line(script, argv, python="python3"):
    """The command that ran this harness, for its report: the script's path
    from the repo root, so that it can be run again from there."""
    return shlex.join([python, os.path.relpath(os.path.abspath(script), REPO_DIR)] + argv)


def share_sidecar_secret():
    """rdma-server serves a non-loopback address only with a shared secret;
    the sidecar and every client of the run inherit this one."""
    os.environ.setdefault("RDMA_SIDECAR_SECRET", secrets.token_hex(32))


def built_binary(build_dir, rel, how):
    """The path of a program in build_dir, or a BenchError saying `how` to build it."""
    path = os.path.join(build_dir, rel)
    if not os.access(path, os.X_OK):
        raise BenchError(f"{path} not found: {how}")
    return path


def free_port():
    """A TCP port free on loopback right now (the caller retries on a race)."""
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def wait_until(what, predicate, timeout_s, poll_s=POLL_S):
    """Polls predicate() until true; returns time.monotonic() when it was seen."""
    deadline = time.monotonic() + timeout_s
    while True:
        if predicate():
            return time.monotonic()
        if time.monotonic() > deadline:
            raise BenchError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(poll_s)


def cpu_busy(interval_s=0.5):
    """Fraction of the machine's CPU time not idle over interval_s (/proc/stat):
    on a shared box, anything else running skews a benchmark."""
    def snap():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v), v[3] + v[4]  # total, idle + iowait
    t1, i1 = snap()
    time.sleep(interval_s)
    t2, i2 = snap()
    return 1.0 - (i2 - i1) / max(1, t2 - t1)


def settle(wait_s, quiet):
    """How busy the machine is (cpu_busy) once it is under `quiet`, or after
    waiting up to wait_s s for that (0: just measure)."""
    deadline = time.monotonic() + wait_s
    busy = cpu_busy()
    while busy > quiet and time.monotonic() < deadline:
        busy = cpu_busy()
    return busy


def tail(path, lines=15):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


def pin_prefix(cpu):
    """argv prefix that pins a process to one CPU, or [] for unpinned."""
    return [] if cpu is None else ["taskset", "-c", str(cpu)]


class Procs:
    """Every process the benchmark starts, so that all are stopped at exit.

    Children run in their own session, so a Ctrl-C reaches only the harness,
    which then stops them here in reverse start order.
    """

    def __init__(self):
        self.running = []  # (name, Popen), start order

    def start(self, name, argv, **popen_kw):
        p = subprocess.Popen(argv, start_new_session=True, **popen_kw)
        self.running.append((name, p))
        return p

    def stop(self, p, grace_s=15.0):
        """SIGTERM, then SIGKILL after grace_s. Safe to call twice."""
        if p.poll() is None:
            try:
                p.send_signal(signal.SIGTERM)
                p.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            except ProcessLookupError:
                pass
        self.running = [(n, q) for (n, q) in self.running if q is not p]

    def stop_all(self):
        for _, p in reversed(list(self.running)):
            self.stop(p)

    def alive(self):
        return [(n, p) for (n, p) in self.running if p.poll() is None]


class RedisServer:
    """A redis-server (or valkey-server: `server`, a ServerBinary; default the
    redis-server on PATH) on a free loopback port with its own directory and log."""

    BASE_ARGS = [
        "--bind", LOOPBACK,
        "--save", "",
        "--appendonly", "no",
        "--daemonize", "no",
        "--enable-debug-command", "yes",  # DEBUG DIGEST, to compare keyspaces
    ]

    def __init__(self, procs, name, workdir, cpu=None, extra_args=(), server=None):
        self.procs, self.name, self.cpu = procs, name, cpu
        self.binary = server.binary if server else shutil.which("redis-server") or "redis-server"
        self.label = server.describe() if server else os.path.basename(self.binary)
        self.dir = os.path.join(workdir, name)
        os.makedirs(self.dir, exist_ok=True)
        self.log = os.path.join(self.dir, "redis.log")
        self.extra_args = list(extra_args)
        self.port = None
        self.proc = None
        self.conn = None
        self._log_seen = 0  # bytes of the log load_failure() has read

    def start(self, timeout_s=20.0):
        for _ in range(3):  # a free port can be taken between probe and bind
            self.port = free_port()
            argv = pin_prefix(self.cpu) + [
                self.binary,
                "--port", str(self.port), "--dir", self.dir, "--logfile", self.log,
            ] + self.BASE_ARGS + self.extra_args
            self.proc = self.procs.start(self.name, argv, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.STDOUT)
            try:
                wait_until(f"{self.name} to answer PING", self._pings, timeout_s)
                return self
            except BenchError:
                if self.proc.poll() is None:
                    raise
                self.procs.stop(self.proc)
                if "Address already in use" not in tail(self.log):
                    raise BenchError(f"{self.name} exited at start:\n{tail(self.log)}")
        raise BenchError(f"{self.name}: no free port after 3 tries")

    def load_failure(self):
        """Refused(...) once this replica's log says it cannot load its master's
        RDB version, a BenchError for another failed load, else None. Reads
        only what the log gained since the last call."""
        try:
            with open(self.log, "rb") as f:
                f.seek(self._log_seen)
                chunk = f.read()
        except OSError:
            return None
        done = chunk[:chunk.rfind(b"\n") + 1]
        self._log_seen += len(done)
        for ln in done.decode(errors="replace").splitlines():
            if "Can't handle RDB format version" in ln:
                return Refused(f"the {self.label} replica ({self.name}) cannot load the "
                               f"master's RDB: {ln.split(' # ', 1)[-1].strip()}")
            if re.search(r"Failed trying to load the (MASTER|PRIMARY) synchronization", ln):
                return BenchError(f"{self.name} failed to load the master's RDB:\n"
                                  f"{tail(self.log)}")
        return None

    def _pings(self):
        if self.proc.poll() is not None:
            raise BenchError(f"{self.name} exited (status {self.proc.returncode}):\n"
                             f"{tail(self.log)}")
        try:
            self.conn = Resp(self.port)
            return self.conn.call("PING") == "PONG"
        except (OSError, BenchError):
            return False

    def call(self, *args, timeout=None):
        return self.conn.call(*args, timeout=timeout)

    def info(self, section):
        return self.conn.info(section)

    def stop(self):
        if self.conn:
            try:
                self.conn.close()
            except OSError:
                pass
            self.conn = None
        if self.proc:
            self.procs.stop(self.proc)


def replica_synced(replica):
    """True once a replica finished its full sync: link up and nothing loading
    (with repl-diskless-load swapdb the link comes up only after the load)."""
    info = replica.info("replication")
    return (info.get("master_link_status") == "up"
            and info.get("master_sync_in_progress") == "0")


def synced_or_refused(replica):
    """replica_synced(), or raises when the replica failed to load its master's
    RDB (Refused for an RDB version it does not read): a timeout otherwise."""
    failure = replica.load_failure()
    if failure:
        raise failure
    return replica_synced(replica)


def master_idle(master, replicas_allowed=0):
    """True when the master has no fork child (BGSAVE / full sync) and at most
    `replicas_allowed` replicas connected."""
    p = master.info("persistence")
    r = master.info("replication")
    return (p["rdb_bgsave_in_progress"] == "0"
            and int(r["connected_slaves"]) <= replicas_allowed)


def kv_fields(line):
    """`a=1 b=x` -> {"a": "1", "b": "x"} (tokens without '=' are skipped)."""
    return dict(tok.split("=", 1) for tok in line.split() if "=" in tok)


def load_dataset(procs, gen_dataset, port, keys, value_size, dtype="strings", cpu=None,
                 timeout_s=600.0, extra_args=()):
    """Loads a random-byte data set into the Redis on `port` with the gen_dataset
    tool (`extra_args` appended to its own); returns (wall seconds, its summary
    line). Raises BenchError on failure."""
    argv = pin_prefix(cpu) + [gen_dataset, "--redis", f"{LOOPBACK}:{port}",
                              "--keys", str(keys), "--value-size", str(value_size)]
    if dtype != "strings":
        argv += ["--type", dtype]
    argv += list(extra_args)
    t0 = time.monotonic()
    p = procs.start("gen_dataset", argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                    text=True)
    out, _ = p.communicate(timeout=timeout_s)
    wall = time.monotonic() - t0
    procs.stop(p)
    if p.returncode != 0:
        raise BenchError(f"gen_dataset failed ({p.returncode}): {out.strip()}")
    return wall, out.strip().splitlines()[-1] if out.strip() else ""


class Sidecar:
    """rdma-server, its stdout in a file polled every 5 ms for the `ready` line.

    While it waits, every new stderr line is stamped with its first sighting,
    in seconds since the spawn (`events`): where the time before `ready` went.
    """

    def __init__(self, procs, name, workdir):
        self.procs, self.name = procs, name
        self.log = os.path.join(workdir, f"{name}.log")
        self.port = None
        self.proc = None
        self.events = []  # (seconds since spawn, stderr line)

    def spawn(self, argv):
        """Spawns argv + --port P without waiting for `ready`; returns when
        (time.monotonic())."""
        self.port = free_port()
        with open(self.log, "w") as out, open(self.log + ".stderr", "w") as err:
            t0 = time.monotonic()
            self.proc = self.procs.start(self.name, argv + ["--port", str(self.port)],
                                         stdout=out, stderr=err)
        return t0

    def start(self, argv, timeout_s):
        """Spawns argv + --port P; returns (seconds from spawn to `ready`, the line)."""
        t0 = self.spawn(argv)
        line = None
        seen = 0  # stderr bytes already stamped

        def ready():
            nonlocal line, seen
            with open(self.log + ".stderr", "rb") as f:
                f.seek(seen)
                chunk = f.read()
            done = chunk[:chunk.rfind(b"\n") + 1]
            if done:
                now = time.monotonic() - t0
                seen += len(done)
                self.events += [(now, ln) for ln in done.decode(errors="replace").splitlines()]
            with open(self.log, errors="replace") as f:
                for ln in f:
                    if ln.endswith("\n") and re.search(r"(^|\s)ready(\s|$)", ln):
                        line = ln.strip()
                        return True
            if self.proc.poll() is not None:
                raise BenchError(f"{self.name} exited {self.proc.returncode} before ready:\n"
                                 f"{tail(self.log)}{tail(self.log + '.stderr')}")
            return False
        t1 = wait_until(f"{self.name} `ready` line", ready, timeout_s, poll_s=0.005)
        return t1 - t0, line

    def stop(self):
        if self.proc:
            self.procs.stop(self.proc)


# ---- what a process costs (Linux /proc) ---------------------------------------

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid, children=True):
    """utime + stime of `pid` (and, with children, of its children it has
    waited for: a Redis master's fork children once it reaped them), in s."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[0] is the state (field 3); utime..cstime are fields 14..17.
    ticks = int(fields[11]) + int(fields[12])
    if children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / CLK_TCK


def processes_cpu(exclude_tree=None):
    """{pid: utime + stime + cutime + cstime in s} of every process on the
    machine except `exclude_tree` and its descendants: the CPU other work took
    over an interval is the sum of the growths (a process that ended meanwhile
    is in its parent's cutime; one that started counts whole)."""
    stats = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        stats[int(d)] = (int(fields[1]), sum(int(x) for x in fields[11:15]) / CLK_TCK)
    out = {}
    for pid, (ppid, cpu) in stats.items():
        p, seen = pid, 0
        while p not in (0, exclude_tree) and p in stats and seen < 64:
            p, seen = stats[p][0], seen + 1
        if p != exclude_tree or exclude_tree is None:
            out[pid] = cpu
    return out


def thread_cpu_seconds(pid, tid=None):
    """utime + stime of one thread (default: the main thread, tid == pid), in s:
    for Redis, the event loop that serves every command."""
    with open(f"/proc/{pid}/task/{tid or pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def reset_peak_rss(pid):
    """Resets VmHWM (the peak RSS) of `pid`, so the next read covers only what
    follows (Linux: write 5 to clear_refs; needs the same user or root)."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss_mb(pid):
    """VmHWM of `pid` in MiB, or None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for ln in f:
                if ln.startswith("VmHWM:"):
                    return int(ln.split()[1]) / 1024
    except OSError:
        pass
    return None


def run_harness(name, make_bench):
    """Runs a harness the way every bench script does: SIGTERM/SIGHUP exit
    cleanly, every process it starts is stopped on exit, errors are printed as
    `name: ...`. `make_bench()` returns an object with procs, run() and
    cleanup(ok). Returns (bench, ok); bench is None if it could not start."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda s, _f: sys.exit(128 + s))
    try:
        bench = make_bench()
    except BenchError as e:
        print(f"{name}: {e}", file=sys.stderr)
        return None, False
    atexit.register(bench.procs.stop_all)
    ok = False
    try:
        bench.run()
        ok = True
    except BenchError as e:
        print(f"{name}: {e}", file=sys.stderr)
    except (KeyboardInterrupt, SystemExit):
        print(f"{name}: interrupted", file=sys.stderr)
    finally:
        bench.cleanup(ok)
    return bench, ok


def cleanup_work(procs, work, keep):
    """A harness's cleanup(): stops every process, then removes the work
    directory, or, with `keep` (a failed run, --keep-logs), says where it is."""
    procs.stop_all()
    if keep:
        print(f"logs kept in {work}", file=sys.stderr)
    else:
        shutil.rmtree(work, ignore_errors=True)


def wrote_report(name, stem, ok, plots=False):
    """main()'s last words and exit status once the report is written: a run
    that did not finish still wrote what it measured, and says so."""
    print(f"\nwrote {stem}.md and {stem}.csv" + (" and plots" if plots else ""))
    if not ok:
        print(f"{name}: the run did not finish; the report holds what was measured",
              file=sys.stderr)
    return 0 if ok else 1


def choose_pinning(a, roles):
    """Checks --master-cpu / --replica-cpu against the CPUs we may use and
    returns what is pinned where (`roles` describes it for the report); with
    --no-pin, no taskset or one CPU, clears both and says why."""
    cpus = sorted(os.sched_getaffinity(0))
    if a.no_pin or not shutil.which("taskset") or len(cpus) < 2:
        why = ("--no-pin" if a.no_pin else "no taskset" if not shutil.which("taskset")
               else "fewer than 2 CPUs")
        a.master_cpu = a.replica_cpu = None
        return f"nothing pinned ({why})"
    for flag in ("master_cpu", "replica_cpu"):
        if getattr(a, flag) not in cpus:
            raise BenchError(f"--{flag.replace('_', '-')} {getattr(a, flag)}: "
                             f"allowed CPUs are {cpus}")
    return roles


class Disturbance:
    """Whether the machine was quiet enough to measure: how busy it was just
    before a measurement (before(): waits up to wait_s for `quiet`), and how
    many cores' worth of CPU processes the harness did not start used during
    it (during()). On a shared box either one skews a benchmark."""

    def __init__(self, wait_s, quiet, others_limit, what="measurement"):
        self.wait_s, self.quiet, self.others_limit = wait_s, quiet, others_limit
        self.what = what  # what a warning calls the measurement: "sync", "copy"
        self.disturbed = 0  # measurements that started on a busy machine
        self._since = None

    def before(self, what=None):
        what = what or self.what
        busy = settle(self.wait_s, self.quiet)
        if busy > self.quiet:
            self.disturbed += 1
            print(f"  warning: machine {busy:.0%} busy before this {what}", flush=True)
        self._since = processes_cpu(os.getpid()), time.monotonic()
        return busy

    def during(self, what=None):
        """Cores others used since before(): work that began mid-measurement."""
        what = what or self.what
        before, t0 = self._since
        used = sum(v - before.get(pid, 0) for pid, v in processes_cpu(os.getpid()).items())
        others = used / max(1e-6, time.monotonic() - t0)
        if others > self.others_limit:
            print(f"  warning: other processes used {others:.2f} cores during this {what}",
                  flush=True)
        return others


def exited_unreaped(p):
    """True once child p exited, without reaping it (waitid WNOWAIT): so that
    reap() still gets its own rusage, not every child's."""
    return os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def reap(p):
    """Waits for child p with wait4: (its CPU seconds, its peak RSS MiB)."""
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


def children_of(pid):
    """The pids of `pid`'s children (every thread's), e.g. a Redis fork child."""
    kids = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return kids


def private_dirty_mb(pid):
    """Private_Dirty of `pid` in MiB (/proc/PID/smaps_rollup): for a fork child,
    the pages copied on write since the fork. None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for ln in f:
                if ln.startswith("Private_Dirty:"):
                    return int(ln.split()[1]) / 1024
    except OSError:
        pass
    return None


def percentile(sorted_xs, q):
    """Nearest-rank percentile of an ascending list, or None when empty."""
    if not sorted_xs:
        return None
    return sorted_xs[min(len(sorted_xs) - 1, max(0, int(q * len(sorted_xs) + 0.5) - 1))]


# ---- the reports' files --------------------------------------------------------

def write_csv(path, fields, rows):
    """rows as CSV: the `fields` columns (others left out), floats to 4 places."""
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.4f}" if isinstance(v, float) else v) for k, v in r.items()})


def key_value_table(pairs):
    """(key, value) pairs as a headless two-column Markdown table (the Machine section)."""
    return ["| | |", "|---|---|"] + [f"| {k} | {v} |" for k, v in pairs]


def pyplot(config_dir, missing):
    """matplotlib.pyplot drawing to files, or None (printing `missing`) when
    matplotlib is not installed."""
    # A read-only or missing ~/.config (the VM) makes matplotlib complain.
    os.environ.setdefault("MPLCONFIGDIR", os.path.join("/tmp", config_dir))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(missing)
        return None
    return plt
