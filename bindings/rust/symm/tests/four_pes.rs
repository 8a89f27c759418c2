//! Four PEs under `symmrun -n 4` on the host backend.
//!
//! `four_pes_under_symmrun` (the driver) runs this same test binary as a job:
//! `symmrun -n 4 -- <this binary> --exact pe_worker --ignored`, with the
//! runtime and symmrun of the meson build in `SYMM_BUILD_DIR`. Every PE runs
//! `pe_worker`, which checks each result against the value it must have and
//! panics (exit status 101) otherwise; symmrun then stops the job and exits
//! non-zero, which fails the driver.

mod common;

use std::process::Command;

use symm::{Backend, Buffer, Cmp, Context, Error, ReduceOp, SignalOp, Team};

const N_PES: i32 = 4;

#[test]
fn four_pes_under_symmrun() {
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(common::symmrun())
        .args(["-n", &N_PES.to_string(), "--timeout", "120", "--"])
        .arg(&exe)
        .args([
            "--exact",
            "pe_worker",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("SYMM_RUNTIME", common::runtime())
        .env("SYMM_BACKEND", "host")
        .env("SYMM_RUST_TEST_PE_WORKER", "1")
        .output()
        .expect("symmrun starts");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "symmrun -n {N_PES} failed: {}\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
    // Every PE really ran the worker and reached its end.
    for pe in 0..N_PES {
        let line = format!("pe {pe}/{N_PES}: all checks passed");
        assert!(
            stdout.contains(&line),
            "missing {line:?}\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
        );
    }
}

/// One PE of the job (run by the driver through symmrun; ignored otherwise).
#[test]
#[ignore = "runs as a PE under symmrun, started by four_pes_under_symmrun"]
fn pe_worker() {
    assert!(
        std::env::var_os("SYMM_RUST_TEST_PE_WORKER").is_some(),
        "pe_worker runs under symmrun, started by four_pes_under_symmrun"
    );
    let ctx = Context::init().expect("init under symmrun");
    let (me, n) = (ctx.my_pe(), ctx.n_pes());
    assert_eq!(n, N_PES);
    assert_eq!(ctx.query().unwrap().backend, Backend::Host);
    let right = (me + 1) % n;
    let left = (me + n - 1) % n;

    // Ring put: each PE writes 3 values into its right neighbour.
    let ring = ctx.alloc::<i64>(3).unwrap();
    let mine: Vec<i64> = (0..3).map(|k| 100 * me as i64 + k).collect();
    ring.put(0, &mine, right).unwrap();
    ctx.barrier_all().unwrap();
    let mut got = [0i64; 3];
    ring.get(0, &mut got, me).unwrap();
    let expect: Vec<i64> = (0..3).map(|k| 100 * left as i64 + k).collect();
    assert_eq!(got.to_vec(), expect, "ring put from the left neighbour");
    // ... and a get from the right neighbour's copy (which holds my values).
    ring.get(0, &mut got, right).unwrap();
    assert_eq!(got.to_vec(), mine);

    // Sum reduce (and max on f64) over the world team.
    let world = ctx.world();
    let src = ctx.alloc::<i64>(2).unwrap();
    let dst = ctx.alloc::<i64>(2).unwrap();
    src.put(0, &[me as i64 + 1, 10 * (me as i64 + 1)], me)
        .unwrap();
    world.reduce(&dst, 0, &src, 0, 2, ReduceOp::Sum).unwrap();
    let mut sum = [0i64; 2];
    dst.get(0, &mut sum, me).unwrap();
    let tri = (n * (n + 1) / 2) as i64;
    assert_eq!(sum, [tri, 10 * tri], "sum reduce");
    let fsrc = ctx.alloc::<f64>(1).unwrap();
    let fdst = ctx.alloc::<f64>(1).unwrap();
    fsrc.p(0, -(me as f64) * 0.5, me).unwrap();
    world.reduce(&fdst, 0, &fsrc, 0, 1, ReduceOp::Min).unwrap();
    assert_eq!(
        fdst.g(0, me).unwrap(),
        -((n - 1) as f64) * 0.5,
        "min reduce"
    );

    // Put with signal + wait: data to the right, signal = sender + 1.
    let data = ctx.alloc::<i32>(4).unwrap();
    let sig = ctx.alloc::<u64>(1).unwrap();
    let payload = [me, me * 2, me * 3, -me];
    data.put_signal(0, &payload, &sig, 0, me as u64 + 1, SignalOp::Set, right)
        .unwrap();
    let v = sig.signal_wait_until(0, Cmp::Eq, left as u64 + 1).unwrap();
    assert_eq!(v, left as u64 + 1);
    let mut arrived = [0i32; 4];
    data.get(0, &mut arrived, me).unwrap();
    assert_eq!(
        arrived,
        [left, left * 2, left * 3, -left],
        "data visible with its signal"
    );

    // Atomic fetch-add: every PE adds me + 1 to PE 0's counter.
    let counter = ctx.alloc::<u64>(1).unwrap();
    let before = counter.atomic_fetch_add(0, me as u64 + 1, 0).unwrap();
    assert!(before < tri as u64);
    ctx.barrier_all().unwrap();
    assert_eq!(
        counter.atomic_fetch(0, 0).unwrap(),
        tri as u64,
        "fetch-add total"
    );
    // The fetched values are distinct: gather them and check.
    let fetched = ctx.alloc::<u64>(1).unwrap();
    let all = ctx.alloc::<u64>(n as usize).unwrap();
    fetched.p(0, before, me).unwrap();
    world.fcollect(&all, 0, &fetched, 0, 1).unwrap();
    let mut seen = vec![0u64; n as usize];
    all.get(0, &mut seen, me).unwrap();
    assert_eq!(
        seen[me as usize], before,
        "fcollect puts my block at my index"
    );
    let mut sorted = seen.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(
        sorted.len(),
        n as usize,
        "every fetch saw a different value: {seen:?}"
    );

    // Point-to-point wait: the left neighbour sets my flag with p().
    let flag = ctx.alloc::<i32>(1).unwrap();
    flag.p(0, 7 + me, right).unwrap();
    flag.wait_until(0, Cmp::Eq, 7 + left).unwrap();

    // Non-blocking ring in a scope, then broadcast and alltoall.
    let nbi = ctx.alloc::<u32>(2).unwrap();
    let out = [me as u32, 42];
    ctx.nbi_scope(|s| s.put(&nbi, 0, &out, right))
        .unwrap()
        .unwrap();
    ctx.barrier_all().unwrap();
    assert_eq!(nbi.g(0, me).unwrap(), left as u32);
    world.broadcast(&ring, 0, &src, 1, 1, 2).unwrap();
    assert_eq!(ring.g(0, me).unwrap(), 30, "broadcast from PE 2");
    let a2a_src = ctx.alloc::<i32>(n as usize).unwrap();
    let a2a_dst = ctx.alloc::<i32>(n as usize).unwrap();
    let blocks: Vec<i32> = (0..n).map(|j| 10 * me + j).collect();
    a2a_src.put(0, &blocks, me).unwrap();
    world.alltoall(&a2a_dst, 0, &a2a_src, 0, 1).unwrap();
    let mut recv = vec![0i32; n as usize];
    a2a_dst.get(0, &mut recv, me).unwrap();
    assert_eq!(
        recv,
        (0..n).map(|i| 10 * i + me).collect::<Vec<_>>(),
        "alltoall"
    );

    alltoallv_checks(&ctx, &world);

    // A split team of the even PEs reduces on its own.
    match world.split_strided(0, 2, n / 2).unwrap() {
        Some(even) => {
            assert_eq!(me % 2, 0, "only even PEs are members");
            assert_eq!(even.n_pes(), n / 2);
            assert_eq!(even.my_pe(), me / 2);
            even.reduce(&dst, 0, &src, 0, 1, ReduceOp::Sum).unwrap();
            assert_eq!(
                dst.g(0, me).unwrap(),
                (0..n).step_by(2).map(|p| p as i64 + 1).sum::<i64>()
            );
            even.destroy().unwrap();
        }
        None => assert_eq!(me % 2, 1, "odd PEs are not members"),
    }

    // Out of bounds on a peer's copy is an error, not a write.
    assert!(matches!(
        ring.put(2, &[1, 2], right),
        Err(symm::Error::OutOfBounds(_))
    ));
    assert!(matches!(
        ring.put(0, &[1], n),
        Err(symm::Error::InvalidArg(_))
    ));

    drop(world);
    for b in [ring, src, dst] {
        b.free().unwrap();
    }
    for b in [fsrc, fdst] {
        b.free().unwrap();
    }
    for b in [data, flag, a2a_src, a2a_dst] {
        b.free().unwrap();
    }
    for b in [sig, counter, fetched, all] {
        b.free().unwrap();
    }
    nbi.free().unwrap();
    assert!(ctx.async_error(false).unwrap().is_none());
    ctx.finalize().unwrap();
    println!("pe {me}/{n}: all checks passed");
}

/// Elements team PE `s` sends to team PE `r` in the alltoallv checks: 0 to 4,
/// some pairs 0 (rows: [1 4 0 3] [1 4 2 0] [4 4 4 4] [2 4 1 1]).
fn a2av_count(s: i32, r: i32) -> usize {
    ((s * 5 + r * 3 + s * r * 2 + 1) % 7 % 5) as usize
}

/// Element `k` of PE `pe`'s alltoallv source buffer (all of it, not only the
/// range sent).
fn a2av_value(pe: i32, k: usize) -> i32 {
    1000 * (pe + 1) + k as i32
}

// The alltoallv layout: src_index, src_nelems, dst_index, dst_nelems,
// send_index, recv_index, and the buffers' lengths (room on both sides).
const A2AV_SI: usize = 1;
const A2AV_SN: usize = 18;
const A2AV_DI: usize = 2;
const A2AV_DN: usize = 18;
const A2AV_CI: usize = 1;
const A2AV_RI: usize = 1;
const A2AV_LEN: usize = 22;
const SENTINEL: i32 = -1;

/// What PE `me`'s dst (all `A2AV_LEN` elements) and its 2n receive entries
/// must be after the forward exchange, computed from `a2av_count` alone.
fn a2av_expected(me: i32, n: i32) -> (Vec<i32>, Vec<u64>) {
    let mut dst = vec![SENTINEL; A2AV_LEN];
    let mut rc = vec![0u64; 2 * n as usize];
    let mut at = 0;
    for s in 0..n {
        // where s packed its elements for me: after those for team PEs < me
        let off: usize = (0..me).map(|q| a2av_count(s, q)).sum();
        let c = a2av_count(s, me);
        for k in 0..c {
            dst[A2AV_DI + at + k] = a2av_value(s, A2AV_SI + off + k);
        }
        rc[s as usize] = c as u64;
        rc[(n + s) as usize] = at as u64;
        at += c;
    }
    assert!(
        at <= A2AV_DN,
        "the layout has room for what PE {me} receives"
    );
    (dst, rc)
}

fn read_all<T: symm::Element>(b: &Buffer<'_, T>, me: i32) -> Vec<T> {
    let mut v = vec![T::default(); b.len()];
    b.get(0, &mut v, me).unwrap();
    v
}

/// Check PE `me`'s dst against the forward exchange, element by element,
/// and its receive entries (`rc`: the 2n entries read from recv_index).
fn a2av_check_forward(dst: &Buffer<'_, i32>, rc: &[u64], me: i32, n: i32, what: &str) {
    let (want_dst, want_rc) = a2av_expected(me, n);
    let got = read_all(dst, me);
    for (i, (g, w)) in got.iter().zip(&want_dst).enumerate() {
        assert_eq!(g, w, "{what}: dst[{i}] on PE {me} (whole dst: {got:?})");
    }
    assert_eq!(
        rc,
        &want_rc[..],
        "{what}: recv counts and offsets on PE {me}"
    );
}

/// Variable-size all-to-all (ABI 1.2): the forward exchange with per-pair
/// counts (zeros included) and non-zero indices, checked element by element;
/// the combine restores every element; a dst too small on one PE fails there
/// only (nothing copied, receive counts written); src_nelems that disagree
/// are a mismatch everywhere; the stream form then works on the same team.
fn alltoallv_checks(ctx: &Context, world: &Team<'_>) {
    let (me, n) = (world.my_pe(), world.n_pes());
    let nu = n as usize;
    let src = ctx.alloc::<i32>(A2AV_LEN).unwrap();
    let dst = ctx.alloc::<i32>(A2AV_LEN).unwrap();
    let back = ctx.alloc::<i32>(A2AV_LEN).unwrap();
    let scnt = ctx.alloc::<i64>(nu + 2).unwrap();
    let rcnt = ctx.alloc::<i64>(2 * nu + 1).unwrap();
    let rcnt2 = ctx.alloc::<i64>(2 * nu).unwrap();
    let mine: Vec<i32> = (0..A2AV_LEN).map(|k| a2av_value(me, k)).collect();
    src.put(0, &mine, me).unwrap();
    let sends: Vec<usize> = (0..n).map(|r| a2av_count(me, r)).collect();
    let sent: usize = sends.iter().sum();
    assert!(sent <= A2AV_SN);
    let mut sc = vec![-5i64; nu + 2]; // entries outside the range are not counts
    for (r, c) in sends.iter().enumerate() {
        sc[A2AV_CI + r] = *c as i64;
    }
    scnt.put(0, &sc, me).unwrap();
    dst.put(0, &[SENTINEL; A2AV_LEN], me).unwrap();
    back.put(0, &[SENTINEL; A2AV_LEN], me).unwrap();
    rcnt.put(0, &vec![-7; 2 * nu + 1], me).unwrap();

    // Forward (dispatch), i64 counts.
    world
        .alltoallv(
            &dst, A2AV_DI, A2AV_DN, &src, A2AV_SI, A2AV_SN, &scnt, A2AV_CI, &rcnt, A2AV_RI,
        )
        .unwrap();
    let rc = read_all(&rcnt, me);
    assert_eq!(rc[0], -7, "recv_counts before recv_index untouched");
    let rc_u: Vec<u64> = rc[A2AV_RI..].iter().map(|&c| c as u64).collect();
    a2av_check_forward(&dst, &rc_u, me, n, "alltoallv");
    assert_eq!(read_all(&src, me), mine, "alltoallv leaves src as it was");
    assert_eq!(
        read_all(&scnt, me),
        sc,
        "alltoallv leaves send_counts as they were"
    );

    // Combine: the receive counts as send counts, dst as src, into back.
    world
        .alltoallv(
            &back, A2AV_SI, A2AV_SN, &dst, A2AV_DI, A2AV_DN, &rcnt, A2AV_RI, &rcnt2, 0,
        )
        .unwrap();
    let mut want_back = vec![SENTINEL; A2AV_LEN];
    want_back[A2AV_SI..A2AV_SI + sent].copy_from_slice(&mine[A2AV_SI..A2AV_SI + sent]);
    assert_eq!(
        read_all(&back, me),
        want_back,
        "combine: every element back in the slot it left from"
    );
    let rc2 = read_all(&rcnt2, me);
    let mut off = 0i64;
    for r in 0..nu {
        assert_eq!(rc2[r], sends[r] as i64, "combine's recv count from PE {r}");
        assert_eq!(rc2[nu + r], off, "combine's recv offset of PE {r}");
        off += sends[r] as i64;
    }

    // dst too small on the last PE (u64 counts this time): it gets
    // OutOfBounds, copies nothing, still writes its receive counts; the
    // others succeed with their complete result.
    let scnt_u = ctx.alloc::<u64>(nu).unwrap();
    let rcnt_u = ctx.alloc::<u64>(2 * nu).unwrap();
    let sends_u: Vec<u64> = sends.iter().map(|&c| c as u64).collect();
    scnt_u.put(0, &sends_u, me).unwrap();
    dst.put(0, &[SENTINEL; A2AV_LEN], me).unwrap();
    let (_, want_rc) = a2av_expected(me, n);
    let incoming: u64 = want_rc[..nu].iter().sum();
    let small = me == n - 1;
    let dst_n = if small {
        incoming as usize - 1
    } else {
        A2AV_DN
    };
    let r = world.alltoallv(
        &dst, A2AV_DI, dst_n, &src, A2AV_SI, A2AV_SN, &scnt_u, 0, &rcnt_u, 0,
    );
    let rc_after = read_all(&rcnt_u, me);
    if small {
        match r {
            Err(Error::OutOfBounds(ref m)) => assert!(m.contains("dst_nelems"), "{m}"),
            other => panic!("PE {me} with a dst too small: {other:?}"),
        }
        assert_eq!(
            read_all(&dst, me),
            vec![SENTINEL; A2AV_LEN],
            "the PE without room copied nothing"
        );
        assert_eq!(rc_after, want_rc, "it still wrote what would have come");
    } else {
        r.unwrap_or_else(|e| panic!("PE {me} next to a PE without room: {e}"));
        a2av_check_forward(&dst, &rc_after, me, n, "alltoallv next to a failure");
    }

    // src_nelems must agree: one PE that differs is a mismatch for all, and
    // nothing moves.
    dst.put(0, &[SENTINEL; A2AV_LEN], me).unwrap();
    let sn = if me == 0 { A2AV_SN - 1 } else { A2AV_SN };
    let e = world
        .alltoallv(
            &dst, A2AV_DI, A2AV_DN, &src, A2AV_SI, sn, &scnt_u, 0, &rcnt_u, 0,
        )
        .unwrap_err();
    assert!(matches!(e, Error::Mismatch(_)), "PE {me}: {e:?}");
    assert_eq!(
        read_all(&dst, me),
        vec![SENTINEL; A2AV_LEN],
        "a mismatch moves nothing"
    );

    // The team still works: the stream form (complete on return on the host
    // backend) gives the full exchange on every PE.
    rcnt_u.put(0, &vec![u64::MAX; 2 * nu], me).unwrap();
    // SAFETY: host backend (the null stream is not used); the buffers outlive
    // the call, which completes before returning.
    unsafe {
        world
            .alltoallv_on_stream(
                &dst,
                A2AV_DI,
                A2AV_DN,
                &src,
                A2AV_SI,
                A2AV_SN,
                &scnt_u,
                0,
                &rcnt_u,
                0,
                std::ptr::null_mut(),
            )
            .unwrap();
    }
    a2av_check_forward(
        &dst,
        &read_all(&rcnt_u, me),
        me,
        n,
        "alltoallv_on_stream after the errors",
    );

    for b in [src, dst, back] {
        b.free().unwrap();
    }
    for b in [scnt, rcnt, rcnt2] {
        b.free().unwrap();
    }
    for b in [scnt_u, rcnt_u] {
        b.free().unwrap();
    }
}

/// A PE that leaves the job: the one waiting for it gets `Error::PeerFailed`
/// (with a message), never a hang.
#[test]
fn a_peer_that_leaves_is_peer_failed() {
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(common::symmrun())
        .args(["-n", "2", "--timeout", "60", "--"])
        .arg(&exe)
        .args([
            "--exact",
            "peer_failure_worker",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("SYMM_RUNTIME", common::runtime())
        .env("SYMM_BACKEND", "host")
        .env("SYMM_RUST_TEST_PE_WORKER", "1")
        .output()
        .expect("symmrun starts");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("pe 0: PeerFailed as expected"),
        "symmrun -n 2: {}\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
}

/// PE 1 leaves without finalize; PE 0 waits for a signal that never comes.
#[test]
#[ignore = "runs as a PE under symmrun, started by a_peer_that_leaves_is_peer_failed"]
fn peer_failure_worker() {
    assert!(std::env::var_os("SYMM_RUST_TEST_PE_WORKER").is_some());
    let ctx = Context::builder()
        .timeout_ms(20_000)
        .build()
        .expect("init under symmrun");
    let sig = ctx.alloc::<u64>(1).unwrap();
    ctx.barrier_all().unwrap();
    if ctx.my_pe() == 1 {
        std::process::exit(0); // leaves the job: no finalize, no signal
    }
    let e = sig.signal_wait_until(0, Cmp::Eq, 1).unwrap_err();
    assert!(matches!(e, symm::Error::PeerFailed(_)), "{e:?}");
    assert!(!e.message().is_empty());
    drop(sig);
    // finalize still releases everything locally and reports the failure.
    let f = ctx.finalize().unwrap_err();
    assert!(matches!(f, symm::Error::PeerFailed(_)), "{f:?}");
    println!("pe 0: PeerFailed as expected ({e})");
}
