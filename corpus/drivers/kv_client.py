"""YCSB-like client for a key-value server (Redis or memcached) on loopback.

Load phase: KEYS records of VALUE bytes each (key:%010d), pipelined. Then it asks the
server to write the start marker (Redis: DEBUG LOG TK_START, which the server logs to its
stdout; memcached: verbosity 2, get TK_START, verbosity 0, which the server logs to its
stderr), and runs the measured phase: OPS operations, READ_PCT% reads and the rest
updates, keys drawn from YCSB's scrambled Zipfian distribution (constant 0.99), sent in
pipelined batches of DEPTH.

Usage: kv_client.py redis|memcached PORT KEYS VALUE OPS READ_PCT [DEPTH] [SEED]
Prints the measured phase's operations per second to stderr.
"""
import random
import socket
import sys
import time

ZIPF_THETA = 0.99


class ScrambledZipf:
    """YCSB's ScrambledZipfianGenerator: Gray et al.'s Zipf sampler over a large item
    space, each draw hashed (FNV-1a 64) onto [0, n) so the hot keys are spread out."""

    def __init__(self, n, rng, theta=ZIPF_THETA, space=10_000_000_000):
        self.n, self.rng, self.theta, self.space = n, rng, theta, space
        # zeta(space, theta) for YCSB's item space, precomputed by YCSB itself.
        self.zetan = 26.46902820178302
        zeta2 = 1 + 0.5 ** theta
        self.alpha = 1.0 / (1.0 - theta)
        self.eta = (1 - (2.0 / space) ** (1 - theta)) / (1 - zeta2 / self.zetan)
        self.half_pow = 1 + 0.5 ** theta

    def next(self):
        u = self.rng.random()
        uz = u * self.zetan
        if uz < 1.0:
            r = 0
        elif uz < self.half_pow:
            r = 1
        else:
            r = int(self.space * (self.eta * u - self.eta + 1) ** self.alpha)
        h = 0xCBF29CE484222325
        for _ in range(8):
            h ^= r & 0xFF
            h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
            r >>= 8
        return h % self.n


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def send(self, data):
        self.s.sendall(data)

    def read_until(self, token, count):
        """Reads until COUNT occurrences of TOKEN have arrived past the consumed bytes."""
        seen = 0
        start = 0
        while True:
            while True:
                i = self.buf.find(token, start)
                if i < 0:
                    break
                seen += 1
                start = i + len(token)
                if seen == count:
                    self.buf = self.buf[start:]
                    return
            chunk = self.s.recv(1 << 20)
            if not chunk:
                raise ConnectionError("the server closed the connection")
            self.buf += chunk


def resp(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Redis:
    def __init__(self, port):
        self.c = Conn(port)

    def read_replies(self, n):
        # Each reply this client asks for ends with one line that a value cannot hold:
        # values are printable with no CR LF, so count reply terminators by type.
        got = 0
        c = self.c
        while got < n:
            while True:
                if not c.buf:
                    break
                t = c.buf[:1]
                nl = c.buf.find(b"\r\n")
                if nl < 0:
                    break
                if t == b"$":
                    ln = int(c.buf[1:nl])
                    end = nl + 2 + (ln + 2 if ln >= 0 else 0)
                    if len(c.buf) < end:
                        break
                    c.buf = c.buf[end:]
                elif t in (b"+", b":"):
                    c.buf = c.buf[nl + 2:]
                else:
                    raise RuntimeError(f"redis error reply: {c.buf[:nl]!r}")
                got += 1
                if got == n:
                    return
            chunk = c.s.recv(1 << 20)
            if not chunk:
                raise ConnectionError("the server closed the connection")
            c.buf += chunk

    def load(self, keys, value, batch=1000):
        for lo in range(0, keys, batch):
            hi = min(keys, lo + batch)
            self.c.send(b"".join(resp(b"SET", b"key:%010d" % k, value) for k in range(lo, hi)))
            self.read_replies(hi - lo)

    def marker(self):
        self.c.send(resp(b"DEBUG", b"LOG", b"TK_START"))
        self.read_replies(1)

    def batch(self, ops, value):
        self.c.send(b"".join(resp(b"GET", b"key:%010d" % k) if r else resp(b"SET", b"key:%010d" % k, value)
                             for r, k in ops))
        self.read_replies(len(ops))


class Memcached:
    def __init__(self, port):
        self.c = Conn(port)

    def load(self, keys, value, batch=1000):
        for lo in range(0, keys, batch):
            hi = min(keys, lo + batch)
            self.c.send(b"".join(b"set key:%010d 0 0 %d\r\n%s\r\n" % (k, len(value), value) for k in range(lo, hi)))
            self.c.read_until(b"STORED\r\n", hi - lo)

    def marker(self):
        self.c.send(b"verbosity 2\r\nget TK_START\r\nverbosity 0\r\n")
        self.c.read_until(b"OK\r\n", 2)

    def batch(self, ops, value):
        self.c.send(b"".join(b"get key:%010d\r\n" % k if r else b"set key:%010d 0 0 %d\r\n%s\r\n" % (k, len(value), value)
                             for r, k in ops))
        # A get ends with END (hit or miss), a set with STORED: one terminator each, and
        # the batch is complete when all have arrived (nothing else is in flight).
        c = self.c
        while c.buf.count(b"END\r\n") + c.buf.count(b"STORED\r\n") < len(ops):
            chunk = c.s.recv(1 << 20)
            if not chunk:
                raise ConnectionError("the server closed the connection")
            c.buf += chunk
        c.buf = b""


def main():
    proto, port, keys, vsize, ops, read_pct = sys.argv[1], *map(int, sys.argv[2:7])
    depth = int(sys.argv[7]) if len(sys.argv) > 7 else 32
    seed = int(sys.argv[8]) if len(sys.argv) > 8 else 7
    rng = random.Random(seed)
    value = bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(vsize))
    kv = {"redis": Redis, "memcached": Memcached}[proto](port)
    t0 = time.monotonic()
    kv.load(keys, value)
    print(f"loaded {keys} keys of {vsize} B in {time.monotonic() - t0:.1f} s", file=sys.stderr)
    kv.marker()
    zipf = ScrambledZipf(keys, rng)
    t0 = time.monotonic()
    done = 0
    while done < ops:
        n = min(depth, ops - done)
        kv.batch([(rng.random() * 100 < read_pct, zipf.next()) for _ in range(n)], value)
        done += n
    dt = time.monotonic() - t0
    print(f"measured: {done} ops in {dt:.1f} s ({done / dt:.0f} ops/s)", file=sys.stderr)


if __name__ == "__main__":
    main()
