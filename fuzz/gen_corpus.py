#!/usr/bin/env python3
"""Write the seed corpora of the harnesses in fuzz/ (fuzz_<name>.c).

    python3 fuzz/gen_corpus.py   # rewrites the valid-*/bad-* seeds of fuzz/corpus/*/

The layouts follow runtime/core/wire.h. Seeds named valid-* must be accepted
by the decoders and bad-* refused; the replay test (meson test --suite fuzz)
checks both, so this script and the C codec cannot drift apart unnoticed.
"""
import hashlib
import hmac
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
MAGIC, VERSION = 0x4D4D5953, 2
HELLO, WELCOME, REJECT, ALLGATHER, BARRIER, BYE, ABORT, CHALLENGE, AUTH = range(1, 10)
MAX_PAYLOAD = 64 << 20
SECRET = bytes(range(32))


def header(mtype, length, seq=0, magic=MAGIC, version=VERSION):
    return struct.pack("<IHHII", magic, version, mtype, length, seq)


def msg(mtype, payload=b"", seq=0):
    return header(mtype, len(payload), seq) + payload


def hello(rank=1, n_pes=4, session=0, pid=1234, host=0x1122334455667788, nonce=SECRET):
    return struct.pack("<iiIiQ", rank, n_pes, session, pid, host) + nonce


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
    yield "valid-challenge", msg(CHALLENGE, bytes(range(64)))
    yield "valid-auth", msg(AUTH, bytes(range(32)))
    yield "valid-stream", (msg(HELLO, hello(rank=0)) + msg(CHALLENGE, bytes(64)) + msg(AUTH, bytes(32))
                           + msg(WELCOME, welcome(four))
                           + msg(ALLGATHER, b"abcd" * 4, seq=1) + msg(BARRIER, seq=2)
                           + msg(ABORT, abort(2, b"gone")) + msg(BYE))
    yield "bad-empty", b""
    yield "bad-magic", header(BARRIER, 0, magic=0x4D4D5954)
    yield "bad-version", header(BARRIER, 0, version=3)
    yield "bad-version-1-hello", header(HELLO, 56, version=1) + hello()
    yield "bad-challenge-short", header(CHALLENGE, 63) + bytes(63)
    yield "bad-auth-long", header(AUTH, 33) + bytes(33)
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
    # a bracketed host longer than the parser's host buffer
    # (the raw input is parsed as an address text too)
    yield "bad-addr-bracket-long-host", b"tcp:[" + b"h" * 276 + b"]:1"


def argv(*args):
    return b"\0".join(a.encode() for a in args)


def symmrun_seeds():
    yield "valid-basic", argv("-n", "4", "./prog")
    yield "valid-long-options", argv("--np=2", "--hosts=2", "--timeout=1.5", "--grace", "inf",
                                     "prog", "arg")
    yield "valid-attached", argv("-n3", "--no-kill", "--", "prog", "-n", "x")
    yield "valid-np", argv("-np", "4096", "-H", "4096", "-t", "1e9", "-g", "0", "prog")
    yield "valid-grace-env", b"GRACE=0.5\0" + argv("-n", "1", "prog")
    yield "valid-grace-inf-env", b"GRACE=inf\0" + argv("-n", "1", "prog")
    yield "valid-timeout-env", b"TMO=99999999999999999999\0" + argv("-n", "1", "prog")
    yield "bad-n0", argv("-n", "0", "prog")
    yield "bad-n-space", argv("-n", " 4", "prog")
    yield "bad-n-plus", argv("-n", "+4", "prog")
    yield "bad-n-big", argv("-n", "4097", "prog")
    yield "bad-n-junk", argv("-n", "4x", "prog")
    yield "bad-n-wrap", argv("-n", "18446744073709551617", "prog")
    yield "bad-hosts-more", argv("-n", "2", "--hosts", "3", "prog")
    yield "bad-hosts-zero", argv("-n", "2", "--hosts=0", "prog")
    yield "bad-timeout-neg", argv("-n", "2", "-t", "-1", "prog")
    yield "bad-timeout-nan", argv("-n", "2", "--timeout=nan", "prog")
    yield "bad-timeout-inf", argv("-n", "2", "--timeout=inf", "prog")
    yield "bad-grace-neg", argv("-n", "2", "--grace=-1", "prog")
    yield "bad-grace-env", b"GRACE=soon\0" + argv("-n", "1", "prog")
    yield "bad-no-program", argv("-n", "2")
    yield "bad-no-n", argv("prog")
    yield "bad-unknown", argv("-x", "-n", "2", "prog")
    yield "bad-missing-value", argv("-n")
    yield "bad-help", argv("-n", "2", "--help", "prog")
    yield "bad-empty", b""


def lines(*kv):
    return "".join(f"{k}={v}\n" for k, v in kv).encode()


ONE = (("SYMM_RANK", "0"), ("SYMM_N_PES", "1"))


def env_seeds():
    yield "valid-single", lines(*ONE)
    yield "valid-sizes", lines(("SYMM_HEAP_CAP", "64M"), ("SYMM_HEAP_CHUNK", "1MiB"),
                               ("SYMM_TIMEOUT_MS", "5000"), ("SYMM_PEER_TIMEOUT_MS", "100"), *ONE)
    yield "valid-size-limits", lines(("SYMM_HEAP_CAP", "128T"), ("SYMM_HEAP_CHUNK", "64K"),
                                     ("SYMM_TIMEOUT_MS", "4294967295"),
                                     ("SYMM_PEER_TIMEOUT_MS", "3600000"), *ONE)
    yield "valid-backend", lines(("SYMM_BACKEND", "HoSt"), *ONE)
    yield "valid-debug", lines(("SYMM_DEBUG", "trace"), ("SYMM_DEBUG_SUBSYS", "^heap, rma,,bogus"), *ONE)
    yield "valid-attr", b"attr.heap_cap=1\nattr.timeout_ms=5\n" + lines(*ONE)
    yield "valid-torchrun", lines(("RANK", "1"), ("WORLD_SIZE", "4"), ("MASTER_ADDR", "127.0.0.1"),
                                  ("MASTER_PORT", "29500"), ("TORCHELASTIC_RUN_ID", "r1"))
    yield "valid-torchrun-v6", lines(("RANK", "0"), ("WORLD_SIZE", "2"), ("MASTER_ADDR", "::1"),
                                     ("MASTER_PORT", "1"))
    yield "valid-slurm", lines(("SLURM_PROCID", "2"), ("SLURM_NTASKS", "4"), ("SLURM_JOB_ID", "77"),
                               ("SLURM_STEP_ID", "0"), ("SLURM_NNODES", "1"))
    yield "valid-ompi", lines(("OMPI_COMM_WORLD_RANK", "0"), ("OMPI_COMM_WORLD_SIZE", "2"),
                              ("OMPI_MCA_ess_base_jobid", "1234"), ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"))
    yield "valid-symmrun", lines(("SYMM_RANK", "1"), ("SYMM_N_PES", "2"),
                                 ("SYMM_BOOTSTRAP_ADDR", "unix:@symmrun-1-abc"),
                                 ("SYMM_JOB_SECRET", "ab" * 32), ("SYMM_LAUNCHER", "symmrun"))
    yield "valid-remote-secret", lines(("RANK", "0"), ("WORLD_SIZE", "2"),
                                       ("SYMM_BOOTSTRAP_ADDR", "tcp:10.0.0.1:5000"),
                                       ("SYMM_JOB_SECRET", "some words, sixteen or more"))
    yield "bad-secret-short", lines(("RANK", "0"), ("WORLD_SIZE", "2"),
                                    ("SYMM_BOOTSTRAP_ADDR", "tcp:10.0.0.1:5000"),
                                    ("SYMM_JOB_SECRET", "fifteen chars.."))
    yield "bad-no-launcher", b""
    yield "bad-heap-cap-wrap", lines(("SYMM_HEAP_CAP", "99999999999999999999"), *ONE)
    yield "bad-heap-cap-space-neg", lines(("SYMM_HEAP_CAP", " -1"), *ONE)
    yield "bad-heap-cap-plus", lines(("SYMM_HEAP_CAP", "+64M"), *ONE)
    yield "bad-heap-cap-huge", lines(("SYMM_HEAP_CAP", "16777215T"), *ONE)
    yield "bad-heap-chunk-T", lines(("SYMM_HEAP_CHUNK", "8388608T"), *ONE)
    yield "bad-heap-chunk-small", lines(("SYMM_HEAP_CHUNK", "32K"), *ONE)
    yield "bad-heap-chunk-odd", lines(("SYMM_HEAP_CHUNK", "3M"), *ONE)
    yield "bad-attr-cap-max", b"attr.heap_cap=18446744073709551615\n" + lines(*ONE)
    yield "bad-timeout-zero", lines(("SYMM_TIMEOUT_MS", "0"), *ONE)
    yield "bad-timeout-big", lines(("SYMM_TIMEOUT_MS", "4294967296"), *ONE)
    yield "bad-peer-timeout", lines(("SYMM_PEER_TIMEOUT_MS", "3600001"), *ONE)
    yield "bad-backend", lines(("SYMM_BACKEND", "quantum"), *ONE)
    yield "bad-rank-range", lines(("SYMM_RANK", "4"), ("SYMM_N_PES", "4"))
    yield "bad-rank-junk", lines(("SYMM_RANK", "1x"), ("SYMM_N_PES", "4"))
    yield "bad-rank-space", lines(("SYMM_RANK", " 1"), ("SYMM_N_PES", "4"))
    yield "bad-size-zero", lines(("RANK", "0"), ("WORLD_SIZE", "0"))
    yield "bad-size-big", lines(("RANK", "0"), ("WORLD_SIZE", "1048577"))
    yield "bad-remote-no-secret", lines(("RANK", "0"), ("WORLD_SIZE", "2"),
                                        ("SYMM_BOOTSTRAP_ADDR", "tcp:10.0.0.1:5000"))
    yield "bad-master-no-port", lines(("RANK", "0"), ("WORLD_SIZE", "2"), ("MASTER_ADDR", "127.0.0.1"))
    yield "bad-master-port", lines(("RANK", "0"), ("WORLD_SIZE", "2"), ("MASTER_ADDR", "127.0.0.1"),
                                   ("MASTER_PORT", "65535"))
    yield "bad-no-address", lines(("RANK", "0"), ("WORLD_SIZE", "2"))
    yield "bad-slurm-multinode", lines(("SLURM_PROCID", "0"), ("SLURM_NTASKS", "4"),
                                       ("SLURM_JOB_ID", "5"), ("SLURM_NNODES", "2"))
    yield "bad-ompi-multihost", lines(("OMPI_COMM_WORLD_RANK", "0"), ("OMPI_COMM_WORLD_SIZE", "4"),
                                      ("OMPI_MCA_ess_base_jobid", "9"),
                                      ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"))
    yield "bad-addr-scheme", lines(("SYMM_RANK", "0"), ("SYMM_N_PES", "2"),
                                   ("SYMM_BOOTSTRAP_ADDR", "udp:1.2.3.4:5"), ("SYMM_JOB_SECRET", "x"))
    yield "bad-addr-bracket-long-host", lines(("SYMM_RANK", "0"), ("SYMM_N_PES", "2"),
                                              ("SYMM_BOOTSTRAP_ADDR", "tcp:[" + "h" * 276 + "]:1"),
                                              ("SYMM_JOB_SECRET", "x"))


# fuzz_rdv operations (fuzz/fuzz_rdv.c)
CONNECT, RAW, R_HELLO, R_ALLGATHER, R_BARRIER, R_BYE, R_ABORT, CLOSE, SHUTWR, STEP, DRAIN, R_HEADER = range(12)


def ops(n_pes, *o):
    return bytes([n_pes - 1]) + b"".join(bytes(x) for x in o)


def form(n, flags=0):
    out = [(CONNECT, c) for c in range(n)]
    out += [(R_HELLO, c, c, 0, 0, flags) for c in range(n)]
    return out


def rdv_seeds():
    yield "valid-form-1", ops(1, *form(1))
    yield "valid-form-2-collectives", ops(2, *form(2), (R_ALLGATHER, 0, 1, 4, 1, 2, 3, 4),
                                          (R_ALLGATHER, 1, 1, 4, 5, 6, 7, 8), (R_BARRIER, 0, 2),
                                          (R_BARRIER, 1, 2), (R_BYE, 0), (R_BYE, 1), (STEP, 0, 3))
    yield "valid-form-4-stranger", ops(4, (CONNECT, 5), (R_HELLO, 5, 0, 0, 0, 1), *form(4),
                                       (RAW, 5, 4, 0x53, 0x59, 0x4D, 0x4D))
    yield "valid-member-lost", ops(2, *form(2), (CLOSE, 1), (STEP, 0, 2), (R_BARRIER, 0, 1))
    yield "valid-abort", ops(3, *form(3), (R_ABORT, 2, 2, 4, 0x62, 0x6F, 0x6F, 0x6D), (STEP, 0, 1))
    yield "valid-sessions", ops(1, (CONNECT, 0), (CONNECT, 1), (R_HELLO, 0, 0, 0, 0, 0),
                                (R_HELLO, 1, 0, 0, 1, 0), (R_BYE, 0), (CLOSE, 1))
    yield "valid-mismatch", ops(2, *form(2), (R_ALLGATHER, 0, 1, 4, 1, 2, 3, 4),
                                (R_ALLGATHER, 1, 1, 2, 9, 9), (STEP, 0, 2))
    yield "valid-drain", ops(2, *form(2), (DRAIN, 0), (CONNECT, 3), (R_HELLO, 3, 0, 0, 1, 0))
    yield "bad-wrong-secret", ops(1, *form(1, flags=1))
    yield "bad-http", ops(1, (CONNECT, 0), (RAW, 0, 18), b"GET / HTTP/1.0\r\n\r\n")
    yield "bad-size-mismatch", ops(2, (CONNECT, 0), (R_HELLO, 0, 0, 4, 0, 0), (CONNECT, 1),
                                   (R_HELLO, 1, 1, 4, 0, 0))
    yield "bad-dup-rank", ops(2, (CONNECT, 0), (CONNECT, 1), (R_HELLO, 0, 0, 0, 0, 0),
                              (R_HELLO, 1, 0, 0, 0, 0))
    yield "bad-bad-rank", ops(1, (CONNECT, 0), (R_HELLO, 0, 0xFF, 0, 0, 0))
    yield "bad-pid-zero", ops(1, (CONNECT, 0), (R_HELLO, 0, 0, 0, 0, 0x40))
    yield "bad-huge-header", ops(1, (CONNECT, 0), (R_HEADER, 0, 4, 0xFF, 0xFF, 0xFF, 0))
    yield "bad-collective-before-hello", ops(1, (CONNECT, 0), (R_BARRIER, 0, 1), (R_HELLO, 0, 0, 0, 0, 0))
    yield "bad-half-close", ops(2, (CONNECT, 0), (R_HELLO, 0, 0, 0, 0, 0), (SHUTWR, 0), (STEP, 0, 3))


FD_MAGIC, FD_SESSION = 0x464D5953, 3
FD_SECRET = bytes([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]) + bytes(range(11, 33))


def fd_tag(rank, self_rank, seq, session=FD_SESSION, key=FD_SECRET):
    # wire.c symm__wire_fdmsg_tag: HMAC under HMAC(key, label) of session, from, to, seq
    k = hmac.new(key, b"symm descriptor passing v1", hashlib.sha256).digest()
    return hmac.new(k, struct.pack("<IiiI", session, rank, self_rank, seq), hashlib.sha256).digest()


def fdmsg(nfds=1, flags=0, self_rank=0, n_pes=4, rank=1, seq=1, tag=None,
          session=FD_SESSION, magic=FD_MAGIC, extra=b""):
    if tag is None:
        tag = fd_tag(rank, self_rank % 8, seq)
    body = struct.pack("<IIiI", magic, session, rank, seq) + tag + extra
    return bytes([nfds, flags, self_rank, n_pes - 1]) + body


def fdmsg_seeds():
    yield "valid-one-fd", fdmsg()
    # the kernel ends a read at the data that carried descriptors: a sender
    # writes the body whole (send_fd_to), a split one is refused
    yield "bad-split-body", fdmsg(flags=4)
    yield "valid-all-local", fdmsg(flags=8, rank=2)
    yield "valid-trailing-bytes", fdmsg(extra=b"trailing")
    yield "valid-last-rank", fdmsg(self_rank=0, n_pes=8, rank=7)
    yield "bad-no-fd", fdmsg(nfds=0)
    yield "bad-two-fds", fdmsg(nfds=2)
    yield "bad-seven-fds", fdmsg(nfds=7)
    yield "bad-split-headers", fdmsg(nfds=3, flags=1)
    yield "bad-credentials", fdmsg(flags=2)
    yield "bad-secret", fdmsg(tag=bytes(32))
    yield "bad-secret-in-clear", fdmsg(tag=FD_SECRET)  # what the format carried before
    yield "bad-tag-other-receiver", fdmsg(tag=fd_tag(1, 3, 1))  # replayed to PE 0
    yield "bad-tag-other-call", fdmsg(tag=fd_tag(1, 0, 2))
    yield "bad-session", fdmsg(session=4)
    yield "bad-self", fdmsg(self_rank=1, rank=1)
    yield "bad-rank-range", fdmsg(rank=4)
    yield "bad-rank-negative", fdmsg(rank=-1)
    yield "bad-remote-pe", fdmsg(rank=2)
    yield "bad-magic", fdmsg(magic=0x464D5954)
    yield "bad-short", fdmsg()[:4 + 47]
    yield "bad-empty-body", bytes([1, 0, 0, 3])


# fuzz_tcp operations (fuzz/fuzz_tcp.c)
T_CONNECT, T_HELLO, T_AUTH, T_REQ, T_RAW, T_CLOSE, T_SHUTWR, T_STEP = range(8)
PUT, GET, AMO, PUT_SIGNAL, QUIET, UNKNOWN = range(6)  # REQ type choices (REQ_PUT + n)
TCP_MAGIC = 0x53594D54


def tcp_ops(*o):
    return b"\0" + b"".join(bytes(x) for x in o)


def tcp_join(k, pe, signer=None, corrupt=0, to=0):
    # HELLO's choice bytes: from = sel % 6 - 1, to = sel % 3 - 1
    return [(T_CONNECT, k), (T_HELLO, k, pe + 1, to + 1, 5 + k),
            (T_AUTH, k, pe if signer is None else signer, corrupt)]


def tcp_req(k, kind, off=2, length=2, flags=0, dt=0, part=0):
    return (T_REQ, k, kind, off, length, flags, dt, part)


def tcp_seeds():
    uint64, fetch_add = 8, 6
    yield "valid-put", tcp_ops(*tcp_join(0, 1), tcp_req(0, PUT))
    yield "valid-get", tcp_ops(*tcp_join(0, 1), tcp_req(0, GET, off=0, length=5))
    yield "valid-amo", tcp_ops(*tcp_join(0, 2), tcp_req(0, AMO, off=1, dt=uint64 | fetch_add << 4))
    yield "valid-put-signal", tcp_ops(*tcp_join(0, 3), tcp_req(0, PUT_SIGNAL, off=2, length=3, dt=1))
    yield "valid-nbi-quiet", tcp_ops(*tcp_join(0, 1), tcp_req(0, PUT, flags=1),
                                     tcp_req(0, PUT, off=6, flags=1), tcp_req(0, QUIET))
    yield "valid-oob-then-ok", tcp_ops(*tcp_join(0, 1), tcp_req(0, PUT, off=5),
                                       tcp_req(0, GET, off=11, length=2), tcp_req(0, GET, off=8))
    yield "valid-two-peers", tcp_ops(*tcp_join(0, 1), *tcp_join(1, 2), tcp_req(1, PUT),
                                     tcp_req(0, GET, off=2), (T_CLOSE, 1), (T_STEP, 0, 3))
    yield "valid-big-get", tcp_ops(*tcp_join(2, 1), tcp_req(2, GET, off=0, length=6))
    yield "bad-stranger-put", tcp_ops((T_CONNECT, 0), tcp_req(0, PUT))
    yield "bad-stranger-get", tcp_ops((T_CONNECT, 0), tcp_req(0, GET, off=0, length=5))
    yield "bad-wrong-proof", tcp_ops(*tcp_join(0, 1, corrupt=1), tcp_req(0, PUT))
    yield "bad-claim-other", tcp_ops(*tcp_join(0, 1, signer=2), tcp_req(0, PUT))
    yield "bad-wrong-target", tcp_ops(*tcp_join(0, 1, to=1), tcp_req(0, PUT))
    yield "bad-self", tcp_ops(*tcp_join(0, 0), tcp_req(0, PUT))
    yield "bad-auth-first", tcp_ops((T_CONNECT, 0), (T_AUTH, 0, 1, 0), tcp_req(0, PUT))
    yield "bad-http", tcp_ops((T_CONNECT, 0), (T_RAW, 0, 18), b"GET / HTTP/1.0\r\n\r\n",
                              tcp_req(0, PUT))
    yield "bad-partial-hello", tcp_ops((T_CONNECT, 1), (T_RAW, 1, 10), struct.pack("<IHH", TCP_MAGIC, 2, 1)
                                       + b"\1\0", (T_STEP, 1, 3), *tcp_join(0, 1, corrupt=1))
    # version 1: a request header with type 1 (HELLO, off = the PE), then a PUT
    v1 = struct.pack("<6I5Q", TCP_MAGIC, 1, 0, 0, 1, 0, 1, 0, 0, 0, 0)
    yield "bad-version-1", tcp_ops((T_CONNECT, 0), (T_RAW, 0, len(v1)), v1, tcp_req(0, PUT))


def api_seeds():
    import random
    rng = random.Random(9)
    for i in range(12):
        yield f"valid-random-{i:02d}", bytes(rng.randrange(256) for _ in range(64 + 48 * i))
    # every op family once, mostly on live handles and the first buffer
    yield "valid-families", bytes([0] + [b for op in range(13) for b in (op, 0, 0, 1, 2, 0, 5, 3, 1)])


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
    write("symmrun", symmrun_seeds())
    write("env", env_seeds())
    write("rdv", rdv_seeds())
    write("fdmsg", fdmsg_seeds())
    write("api", api_seeds())
    write("tcp", tcp_seeds())
