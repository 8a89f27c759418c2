#!/usr/bin/env python3
"""Write the seed corpora of fuzz/fuzz_wire.c and fuzz/fuzz_uid.c.

    python3 fuzz/gen_corpus.py            # rewrites fuzz/corpus/{wire,uid}/

The layouts follow runtime/core/wire.h. Seeds named valid-* must be accepted
by the decoders and bad-* refused; the replay test (meson test --suite fuzz)
checks both, so this script and the C codec cannot drift apart unnoticed.
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
MAGIC, VERSION = 0x4D4D5953, 1
HELLO, WELCOME, REJECT, ALLGATHER, BARRIER, BYE, ABORT = range(1, 8)
MAX_PAYLOAD = 64 << 20
SECRET = bytes(range(32))


def header(mtype, length, seq=0, magic=MAGIC, version=VERSION):
    return struct.pack("<IHHII", magic, version, mtype, length, seq)


def msg(mtype, payload=b"", seq=0):
    return header(mtype, len(payload), seq) + payload


def hello(rank=1, n_pes=4, session=0, pid=1234, host=0x1122334455667788, secret=SECRET):
    return struct.pack("<iiIiQ", rank, n_pes, session, pid, host) + secret


def welcome(entries):
    return struct.pack("<I", len(entries)) + b"".join(struct.pack("<Qi", h, p) for h, p in entries)


def abort(rank, reason):
    return struct.pack("<iI", rank, len(reason)) + reason


def fnv1a32(data):
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def uid(addr, secret=SECRET, magic=0x554D5953, version=1, addr_len=None, pad=b"", fix_sum=True):
    a = addr.encode()
    body = struct.pack("<IHH", magic, version, len(a) if addr_len is None else addr_len)
    body += secret + (a + pad).ljust(84, b"\0")[:84]
    return body + struct.pack("<I", fnv1a32(body) if fix_sum else 0xDEADBEEF)


def wire_seeds():
    four = [(0x10, 100), (0x10, 101), (0x20, 102), (0x20, 103)]
    yield "valid-hello", msg(HELLO, hello())
    yield "valid-welcome-1", msg(WELCOME, welcome([(7, 42)]))
    yield "valid-welcome-4", msg(WELCOME, welcome(four))
    yield "valid-reject", msg(REJECT, abort(-1, b"wrong job secret"))
    yield "valid-abort", msg(ABORT, abort(3, b"PE 3 (pid 99) disconnected without finalizing"))
    yield "valid-abort-empty", msg(ABORT, abort(0, b""))
    yield "valid-allgather-0", msg(ALLGATHER, b"", seq=1)
    yield "valid-allgather-64", msg(ALLGATHER, bytes(range(64)), seq=2)
    yield "valid-barrier", msg(BARRIER, seq=3)
    yield "valid-bye", msg(BYE)
    yield "valid-stream", (msg(HELLO, hello(rank=0)) + msg(WELCOME, welcome(four))
                           + msg(ALLGATHER, b"abcd" * 4, seq=1) + msg(BARRIER, seq=2)
                           + msg(ABORT, abort(2, b"gone")) + msg(BYE))
    yield "bad-empty", b""
    yield "bad-magic", header(BARRIER, 0, magic=0x4D4D5954)
    yield "bad-version", header(BARRIER, 0, version=2)
    yield "bad-type-0", header(0, 0)
    yield "bad-type-99", header(99, 0)
    yield "bad-truncated-header", header(BARRIER, 0)[:10]
    yield "bad-truncated-payload", header(HELLO, 56) + hello()[:20]
    yield "bad-oversize-allgather", header(ALLGATHER, MAX_PAYLOAD + 1)
    yield "bad-huge-length", header(ALLGATHER, 0xFFFFFFFF)
    yield "bad-hello-length", header(HELLO, 55) + hello()[:55]
    yield "bad-hello-rank", msg(HELLO, hello(rank=4, n_pes=4))
    yield "bad-hello-negative", msg(HELLO, hello(rank=-1))
    yield "bad-hello-pid", msg(HELLO, hello(pid=0))
    yield "bad-welcome-zero", msg(WELCOME, struct.pack("<I", 0))
    yield "bad-welcome-count", msg(WELCOME, struct.pack("<I", 5) + welcome(four)[4:])
    yield "bad-welcome-huge", msg(WELCOME, struct.pack("<I", 0x7FFFFFFF))
    yield "bad-welcome-pid", msg(WELCOME, welcome([(1, 0)]))
    yield "bad-abort-length", msg(ABORT, struct.pack("<iI", 1, 10) + b"short")
    yield "bad-abort-rank", msg(ABORT, abort(-7, b"x"))
    yield "bad-abort-too-long", header(ABORT, 8 + 1025) + abort(1, b"x" * 1025)
    yield "bad-barrier-payload", header(BARRIER, 1) + b"x"
    yield "bad-bye-payload", header(BYE, 4) + b"byee"
    yield "bad-stream-trailing", msg(BARRIER, seq=1) + b"\x53\x59\x4d"
    yield "bad-stream-second", msg(BARRIER, seq=1) + header(7, 3) + b"abc"
    yield "bad-http", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"


def uid_seeds():
    yield "valid-tcp", uid("tcp:127.0.0.1:40123")
    yield "valid-tcp-name", uid("tcp:node-17.cluster.example:29501")
    yield "valid-tcp-v6", uid("tcp:[fe80::1]:5000")
    yield "valid-unix", uid("unix:@symmrun-123-00aa-0011223344556677")
    yield "valid-long", uid("tcp:" + "h" * 73 + ":65535")
    yield "bad-zero", bytes(128)
    yield "bad-short", uid("tcp:127.0.0.1:1")[:100]
    yield "bad-long", uid("tcp:127.0.0.1:1") + b"\0"
    yield "bad-checksum", uid("tcp:127.0.0.1:40123", fix_sum=False)
    yield "bad-magic", uid("tcp:127.0.0.1:40123", magic=0x554D5954)
    yield "bad-version", uid("tcp:127.0.0.1:40123", version=2)
    yield "bad-addr-len-0", uid("", addr_len=0)
    yield "bad-addr-len-big", uid("tcp:127.0.0.1:1", addr_len=84)
    yield "bad-addr-len-short", uid("tcp:127.0.0.1:40123", addr_len=5)
    yield "bad-padding", uid("tcp:127.0.0.1:1", pad=b"\0x")
    yield "bad-addr-space", uid("tcp:127.0.0.1 :1")
    yield "bad-addr-scheme", uid("udp:127.0.0.1:1")
    yield "bad-addr-port", uid("tcp:127.0.0.1:70000")


def write(name, seeds):
    d = os.path.join(HERE, "corpus", name)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        if f.startswith(("valid-", "bad-")):
            os.remove(os.path.join(d, f))
    for seed, data in seeds:
        with open(os.path.join(d, seed), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    write("wire", wire_seeds())
    write("uid", uid_seeds())
