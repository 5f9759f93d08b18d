#!/usr/bin/env python3
"""A fake Redis master that only serves a prepared RDB file: the ingest floor.

A fresh replica told `REPLICAOF 127.0.0.1 <port>` does the usual handshake and
gets the file as a full resync, with no master doing any work (no fork, no
serialisation): what is left is the replica's own load plus loopback TCP.

  PING -> +PONG; AUTH -> +OK; REPLCONF ... -> +OK (GETACK and ACK: no reply);
  PSYNC <replid> <offset> -> +FULLRESYNC <replid> <offset>, then the RDB;
  SYNC (old protocol, also what redis-cli --rdb sends) -> the RDB, no +FULLRESYNC
  line, as a real master does; anything else -> -ERR.

The RDB goes as `$<len>\\r\\n<file>` (the disk-based form), zero copy with
os.sendfile; with eof_mark, to a peer that announced `REPLCONF capa eof`, as
`$EOF:<mark>\\r\\n<file><mark>` (the diskless form; mark = 40 random hex
characters, as Redis makes it; a peer without capa eof gets the $<len> form, as
from a real master). Then the connection stays open: REPLCONF ACK is read and
ignored, and `*1\\r\\n$4\\r\\nPING\\r\\n` goes out every 10 s, until the peer
closes or is silent for 60 s.

Every byte from a peer is untrusted: lines and arguments are at most 64 KiB,
commands at most 64 arguments, and anything malformed closes the connection.

Module:  feeder = RdbFeeder(rdb_path, eof_mark=False); port = feeder.start();
         ...; feeder.wait_served(1, timeout); feeder.served; feeder.stop()
CLI:     python3 bench/rdb_feeder.py --rdb FILE [--port P] [--eof-mark] [-v]
         prints the port on stdout, serves until SIGTERM / Ctrl-C.
Standard library only; every time is time.monotonic().
"""
import argparse
import os
import re
import select
import signal
import socket
import sys
import threading
import time

LOOPBACK = "127.0.0.1"
REPLID = "feed" * 10  # 40 hex characters, fixed: every transfer is the same data set

MAX_LINE = 64 * 1024  # longest request line (inline command or RESP header)
MAX_BULK = 64 * 1024  # longest argument
MAX_ARGS = 64  # most arguments in one command
MAX_CONNS = 64  # concurrent connections; more are closed at once
PING_PERIOD_S = 10.0  # a master's repl-ping-replica-period
IDLE_LIMIT_S = 60.0  # a peer silent this long is dropped (a master's repl-timeout)
STALL_LIMIT_S = 60.0  # a send with no progress for this long is abandoned
TICK_S = 1.0  # longest a connection thread blocks before looking at the clock

PING = b"*1\r\n$4\r\nPING\r\n"
_DIGITS = re.compile(rb"[0-9]{1,19}")


class _Drop(Exception):
    """Close this connection: the peer left, misbehaved, or the feeder stops."""


class RdbFeeder:
    """Serves rdb_path to every replica that connects, on a loopback port.

    served: number of completed transfers (every byte of the RDB handed to the
    kernel; the replica may still be loading). transfers: one dict per completed
    transfer: peer, form ('len' or 'eof'), bytes, start / end (time.monotonic()
    at the sync command and after the last byte). served_event is set after each
    completed transfer; wait_served(n) waits for the n-th.
    """

    def __init__(self, rdb_path, eof_mark=False, port=0, offset=0, replid=REPLID,
                 host=LOOPBACK, log=None):
        if not re.fullmatch(r"[0-9a-f]{40}", replid):
            raise ValueError("replid must be 40 lowercase hex characters")
        self.rdb_path = os.path.abspath(rdb_path)
        self.eof_mark = eof_mark
        self.host, self.port = host, port
        self.offset = int(offset)
        self.replid = replid
        self.log = log or (lambda msg: None)
        self.transfers = []
        self.served_event = threading.Event()
        self._cond = threading.Condition()
        self._stopping = threading.Event()
        self._listener = None
        self._accept_thread = None
        self._conns = {}  # socket -> thread, under _cond

    @property
    def served(self):
        with self._cond:
            return len(self.transfers)

    def wait_served(self, n=1, timeout=None):
        """True once n transfers have completed, False after timeout seconds."""
        with self._cond:
            return self._cond.wait_for(lambda: len(self.transfers) >= n, timeout)

    # ---- lifecycle ---------------------------------------------------------------

    def start(self):
        """Checks the file, listens, returns the port."""
        with open(self.rdb_path, "rb") as f:
            head = f.read(6)
            if not (head.startswith(b"REDIS") or head == b"VALKEY"):  # Valkey 9: VALKEY080
                raise ValueError(f"{self.rdb_path}: not an RDB file (no REDIS or VALKEY magic)")
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            ls.bind((self.host, self.port))
            ls.listen(16)
            ls.settimeout(0.2)  # accept() wakes up to see stop()
        except OSError:
            ls.close()
            raise
        self._listener = ls
        self.port = ls.getsockname()[1]
        self._accept_thread = threading.Thread(target=self._accept_loop,
                                               name="rdb_feeder-accept", daemon=True)
        self._accept_thread.start()
        return self.port

    def stop(self, timeout=5.0):
        """Stops listening and closes every connection. Safe to call twice."""
        self._stopping.set()
        if self._accept_thread:
            self._accept_thread.join(timeout)
        with self._cond:
            conns = list(self._conns.items())
        for sock, _ in conns:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # wakes its thread; it closes the socket
            except OSError:
                pass
        for _, t in conns:
            t.join(timeout)
        if self._listener:
            self._listener.close()
            self._listener = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def _accept_loop(self):
        while not self._stopping.is_set():
            try:
                sock, addr = self._listener.accept()
            except socket.timeout:
                continue
            except OSError:
                if self._stopping.is_set():
                    return
                time.sleep(0.1)  # e.g. EMFILE: do not spin
                continue
            peer = f"{addr[0]}:{addr[1]}"
            with self._cond:
                if len(self._conns) >= MAX_CONNS:
                    sock.close()
                    self.log(f"{peer}: refused, {MAX_CONNS} connections already")
                    continue
                t = threading.Thread(target=self._serve, args=(sock, peer),
                                     name=f"rdb_feeder-{peer}", daemon=True)
                self._conns[sock] = t
            t.start()

    # ---- one connection ----------------------------------------------------------

    def _serve(self, sock, peer):
        conn = _Conn(self, sock, peer)
        self.log(f"{peer}: connected")
        try:
            while True:
                args = conn.read_command()
                if args:
                    conn.dispatch(args)
        except _Drop as e:
            self.log(f"{peer}: closed ({e})")
        except OSError as e:
            self.log(f"{peer}: closed ({e.strerror or e})")
        finally:
            with self._cond:
                self._conns.pop(sock, None)
            sock.close()

    def _completed(self, record):
        with self._cond:
            self.transfers.append(record)
            self._cond.notify_all()
        self.served_event.set()


class _Conn:
    """One peer: a bounded RESP reader, the commands, the RDB transfer."""

    def __init__(self, feeder, sock, peer):
        self.f, self.sock, self.peer = feeder, sock, peer
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.last_rx = time.monotonic()
        self.capa_eof = False
        self.synced = False
        self.next_ping = None  # time.monotonic() of the next PING, once synced

    # -- reading

    def _fill(self):
        """Appends what the peer sends next; meanwhile PINGs and watches timeouts."""
        while True:
            now = time.monotonic()
            if self.f._stopping.is_set():
                raise _Drop("feeder stopping")
            if now - self.last_rx > IDLE_LIMIT_S:
                raise _Drop(f"silent for {IDLE_LIMIT_S:.0f} s")
            if self.next_ping is not None and now >= self.next_ping:
                self._send(PING)
                self.next_ping = now + PING_PERIOD_S
            wait = TICK_S
            if self.next_ping is not None:
                wait = max(0.01, min(wait, self.next_ping - now))
            self.sock.settimeout(wait)
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                continue
            if not data:
                raise _Drop("peer closed")
            self.last_rx = time.monotonic()
            self.buf += data
            return

    def _line(self):
        """One line without its \\n (and \\r); at most MAX_LINE bytes."""
        start = 0
        while True:
            i = self.buf.find(b"\n", start)
            if i >= 0:
                if i > MAX_LINE:
                    raise _Drop("line too long")
                line = bytes(self.buf[:i])
                del self.buf[:i + 1]
                return line[:-1] if line.endswith(b"\r") else line
            if len(self.buf) > MAX_LINE:
                raise _Drop("line too long")
            start = len(self.buf)
            self._fill()

    def _exact(self, n):
        while len(self.buf) < n:
            self._fill()
        data = bytes(self.buf[:n])
        del self.buf[:n]
        return data

    @staticmethod
    def _count(text, limit, what):
        if not _DIGITS.fullmatch(text) or int(text) > limit:
            raise _Drop(f"bad {what} {text[:20]!r}")
        return int(text)

    def read_command(self):
        """A command as a list of bytes, [] for an empty one; _Drop on garbage."""
        line = self._line()
        if not line.startswith(b"*"):  # inline command
            if b"\0" in line:
                raise _Drop("NUL in an inline command")
            return line.split()
        n = self._count(line[1:], MAX_ARGS, "argument count")
        args = []
        for _ in range(n):
            head = self._line()
            if not head.startswith(b"$"):
                raise _Drop(f"expected a bulk string, got {head[:20]!r}")
            size = self._count(head[1:], MAX_BULK, "bulk length")
            data = self._exact(size + 2)
            if data[-2:] != b"\r\n":
                raise _Drop("bulk string not followed by CRLF")
            args.append(data[:-2])
        return args

    # -- commands

    def dispatch(self, args):
        name = args[0].upper()
        shown = b" ".join(a[:40] for a in args[:8]).decode("ascii", "replace")
        if name != b"REPLCONF" or len(args) < 2 or args[1].upper() != b"ACK":
            self.f.log(f"{self.peer}: {shown}")
        if name in (b"POST", b"HOST:"):  # HTTP: what Redis closes on, too
            raise _Drop("looks like HTTP")
        if name == b"PING":
            self._send(b"+PONG\r\n")
        elif name == b"AUTH":
            self._send(b"+OK\r\n")
        elif name == b"REPLCONF":
            sub = args[1].upper() if len(args) > 1 else b""
            if sub in (b"ACK", b"GETACK"):
                return  # a master never answers these
            if sub == b"CAPA" and any(a.lower() == b"eof" for a in args[2::2]):
                self.capa_eof = True
            self._send(b"+OK\r\n")
        elif name in (b"PSYNC", b"SYNC"):
            if self.synced:
                self._send(b"-ERR already synced on this connection\r\n")
            elif name == b"PSYNC" and len(args) != 3:
                self._send(b"-ERR wrong number of arguments for 'psync' command\r\n")
            else:
                self._transfer(psync=(name == b"PSYNC"))
        else:
            self._send(b"-ERR unknown command '%s'\r\n"
                       % re.sub(rb"[^\x21-\x7e]", b"?", args[0][:40]))

    # -- writing

    def _send(self, data):
        view, done, progress = memoryview(data), 0, time.monotonic()
        while done < len(view):
            self._check_send(progress)
            self.sock.settimeout(TICK_S)
            try:
                n = self.sock.send(view[done:])
            except socket.timeout:
                continue
            done += n
            progress = time.monotonic()

    def _check_send(self, progress):
        if self.f._stopping.is_set():
            raise _Drop("feeder stopping")
        if time.monotonic() - progress > STALL_LIMIT_S:
            raise _Drop(f"peer read nothing for {STALL_LIMIT_S:.0f} s")

    def _transfer(self, psync):
        start = time.monotonic()
        eof = self.f.eof_mark and self.capa_eof
        with open(self.f.rdb_path, "rb") as rdb:
            size = os.fstat(rdb.fileno()).st_size
            if psync:
                self._send(b"+FULLRESYNC %s %d\r\n" % (self.f.replid.encode(), self.f.offset))
            if eof:
                mark = os.urandom(20).hex().encode()  # 40 hex characters, like Redis
                self._send(b"$EOF:" + mark + b"\r\n")
            else:
                self._send(b"$%d\r\n" % size)
            self._sendfile(rdb.fileno(), size)
            if eof:
                self._send(mark)
        end = time.monotonic()
        self.synced = True
        self.next_ping = end + PING_PERIOD_S
        form = "eof" if eof else "len"
        self.f.log(f"{self.peer}: sent {size} B ({form} form) in {end - start:.3f} s")
        self.f._completed(dict(peer=self.peer, form=form, bytes=size, start=start, end=end))

    def _sendfile(self, fd, size):
        """Exactly size bytes of fd to the socket, zero copy."""
        out = self.sock.fileno()  # non-blocking: the socket has a timeout
        poller = select.poll()
        poller.register(out, select.POLLOUT)
        offset, progress = 0, time.monotonic()
        while offset < size:
            self._check_send(progress)
            try:
                n = os.sendfile(out, fd, offset, size - offset)
            except BlockingIOError:
                poller.poll(TICK_S * 1000)
                continue
            if n == 0:
                raise _Drop(f"{self.f.rdb_path} shrank while being sent")
            offset += n
            progress = time.monotonic()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rdb", required=True, help="the RDB file to serve")
    p.add_argument("--port", type=int, default=0, help="default: a free port")
    p.add_argument("--eof-mark", action="store_true",
                   help="send the diskless form $EOF:<mark> to peers with capa eof")
    p.add_argument("--offset", type=int, default=0, help="the +FULLRESYNC offset")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="log connections, commands and transfers on stderr")
    a = p.parse_args(argv)
    if not 0 <= a.port <= 65535:
        p.error("--port must be 0..65535")

    def log(msg):
        print(f"{time.monotonic():.3f} {msg}", file=sys.stderr, flush=True)
    feeder = RdbFeeder(a.rdb, eof_mark=a.eof_mark, port=a.port, offset=a.offset,
                       log=log if a.verbose else None)
    try:
        port = feeder.start()
    except (OSError, ValueError) as e:
        print(f"rdb_feeder: {e}", file=sys.stderr)
        return 1
    print(port, flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    while not done.wait(1.0):
        pass
    feeder.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
