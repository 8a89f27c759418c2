//! One PE on the host backend: error mapping, loader queries, and every
//! family of calls against expected values. Needs SYMM_BUILD_DIR (see
//! tests/common).

mod common;

use symm::{AtomicOp, Backend, Bootstrap, Cmp, Context, Error, ReduceOp, SignalOp, F16};

fn ctx() -> Context {
    common::use_build_runtime();
    Context::builder()
        .backend(Backend::Host)
        .bootstrap(Bootstrap::Single)
        .build()
        .expect("a single-PE host context")
}

#[test]
fn loader_reports_the_runtime() {
    common::use_build_runtime();
    symm::probe().expect("probe with the build's runtime");
    let path = symm::runtime_path().expect("a runtime is loaded after probe");
    assert!(path.ends_with("libsymm_runtime.so.1"), "{path}");
    assert_eq!(symm::runtime_version().unwrap(), symm::loader_version());
    let e = symm::set_runtime("/other").unwrap_err();
    assert!(matches!(e, Error::InvalidState(_)), "{e:?}");
}

#[test]
fn out_of_bounds_and_bad_pe_are_errors_with_messages() {
    let ctx = ctx();
    let buf = ctx.alloc::<i32>(4).unwrap();
    assert_eq!(buf.len(), 4);

    let e = buf.put(3, &[1, 2], 0).unwrap_err();
    assert!(matches!(e, Error::OutOfBounds(_)), "{e:?}");
    assert_eq!(e.name(), "SYMM_ERR_OUT_OF_BOUNDS");
    assert!(!e.message().is_empty(), "the runtime's message is carried");
    assert!(e.to_string().contains(e.message()));

    let mut out = [0i32; 5];
    assert!(matches!(
        buf.get(0, &mut out, 0),
        Err(Error::OutOfBounds(_))
    ));
    assert!(matches!(buf.p(4, 1, 0), Err(Error::OutOfBounds(_))));
    assert!(matches!(buf.g(usize::MAX, 0), Err(Error::OutOfBounds(_))));
    let e = buf.put(0, &[1], 1).unwrap_err();
    assert!(
        matches!(e, Error::InvalidArg(_)),
        "pe outside [0, n_pes): {e:?}"
    );
    // Nothing was written by the failed calls.
    let mut all = [9i32; 4];
    buf.get(0, &mut all, 0).unwrap();
    assert_eq!(all, [0, 0, 0, 0]);

    // Checks made by the binding itself.
    let e = buf
        .wait_until_all(0, 2, Some(&[0]), Cmp::Eq, 0)
        .unwrap_err();
    assert!(
        matches!(e, Error::InvalidArg(ref m) if m.contains("status mask")),
        "{e:?}"
    );
    // Float waits are rejected by the runtime.
    let f = ctx.alloc::<f32>(1).unwrap();
    assert!(matches!(
        f.atomic(0, AtomicOp::FetchAdd, 1.0, 0.0, 0),
        Err(Error::InvalidArg(_))
    ));
    // The host backend has no device context.
    assert!(matches!(ctx.device_ctx(), Err(Error::NotSupported(_))));
    assert!(matches!(
        ctx.world().device_team(),
        Err(Error::NotSupported(_))
    ));
    assert!(ctx.async_error(true).unwrap().is_none());
    f.free().unwrap();
    buf.free().unwrap();
    ctx.finalize().unwrap();
}

#[test]
fn rma_atomics_waits_and_collectives_on_one_pe() {
    let ctx = ctx();
    assert_eq!((ctx.my_pe(), ctx.n_pes()), (0, 1));
    let info = ctx.query().unwrap();
    assert_eq!(info.backend, Backend::Host);
    assert_eq!(info.thread_level, symm::ThreadLevel::Multiple);
    assert_eq!((info.my_pe, info.n_pes, info.device), (0, 1, -1));

    let a = ctx.alloc::<u64>(8).unwrap();
    a.put(2, &[5, 6, 7], 0).unwrap();
    assert_eq!(a.g(3, 0).unwrap(), 6);
    a.p(0, 41, 0).unwrap();
    assert_eq!(a.atomic_fetch_add(0, 1, 0).unwrap(), 41);
    assert_eq!(a.atomic_compare_swap(0, 42, 100, 0).unwrap(), 42);
    assert_eq!(a.atomic_fetch(0, 0).unwrap(), 100);
    assert_eq!(a.atomic_swap(0, 1, 0).unwrap(), 100);
    assert_eq!(a.atomic_fetch_or(0, 6, 0).unwrap(), 1);
    assert_eq!(a.atomic_fetch(0, 0).unwrap(), 7);
    // waits and tests over [7, 0, 5, 6, 7, 0, 0, 0]
    a.wait_until(2, Cmp::Eq, 5).unwrap();
    assert!(a.test(3, Cmp::Gt, 5).unwrap());
    assert!(!a.test(3, Cmp::Gt, 6).unwrap());
    assert!(a.test_all(2, 3, None, Cmp::Ge, 5).unwrap());
    assert_eq!(
        a.test_any(0, 8, Some(&[1, 1, 1, 0, 0, 0, 0, 0]), Cmp::Eq, 7)
            .unwrap(),
        Some(4)
    );
    assert_eq!(a.test_some(0, 8, None, Cmp::Eq, 7).unwrap(), vec![0, 4]);
    assert_eq!(a.wait_until_any(0, 4, None, Cmp::Eq, 6).unwrap(), Some(3));
    assert_eq!(
        a.wait_until_some(0, 5, None, Cmp::Ne, 0).unwrap(),
        vec![0, 2, 3, 4]
    );
    assert!(a.test_all_vector(2, None, Cmp::Eq, &[5, 6, 7]).unwrap());
    a.wait_until_all_vector(2, None, Cmp::Eq, &[5, 6, 7])
        .unwrap();
    assert_eq!(
        a.test_any_vector(0, None, Cmp::Eq, &[1, 1, 5]).unwrap(),
        Some(2)
    );
    assert_eq!(
        a.test_some_vector(0, None, Cmp::Eq, &[7, 0, 0, 6]).unwrap(),
        vec![0, 1, 3]
    );
    assert_eq!(
        a.test_any(0, 0, None, Cmp::Eq, 7).unwrap(),
        None,
        "empty set"
    );

    // signals
    let sig = ctx.alloc::<u64>(2).unwrap();
    let data = ctx.alloc::<F16>(4).unwrap();
    let half = [F16::from_f32(1.5), F16::from_f32(-2.0)];
    data.put_signal(0, &half, &sig, 1, 3, SignalOp::Add, 0)
        .unwrap();
    assert_eq!(sig.signal_wait_until(1, Cmp::Ge, 3).unwrap(), 3);
    sig.signal_op(1, 10, SignalOp::Set, 0).unwrap();
    assert_eq!(sig.signal_fetch(1).unwrap(), 10);
    let mut back = [F16::default(); 2];
    data.get(0, &mut back, 0).unwrap();
    assert_eq!(back[1].to_f32(), -2.0);

    // non-blocking scope
    let src = vec![11u64, 12];
    let mut got = vec![0u64; 2];
    let mut fetched = 0u64;
    ctx.nbi_scope(|s| -> symm::Result<()> {
        s.put(&a, 6, &src, 0)?;
        s.put_signal(&a, 0, &src[..1], &sig, 0, 1, SignalOp::Set, 0)?;
        s.atomic(&a, 1, AtomicOp::FetchAdd, 5, 0, 0, &mut fetched)?;
        Ok(())
    })
    .unwrap()
    .unwrap();
    ctx.nbi_scope(|s| s.get(&a, 6, &mut got, 0))
        .unwrap()
        .unwrap();
    assert_eq!(got, [11, 12]);
    assert_eq!(fetched, 0);
    assert_eq!(a.g(1, 0).unwrap(), 5);
    assert_eq!(sig.signal_fetch(0).unwrap(), 1);

    // collectives on a 1-PE world and a split of it
    let world = ctx.world();
    assert_eq!((world.my_pe(), world.n_pes()), (0, 1));
    let src = ctx.alloc::<f64>(2).unwrap();
    let dst = ctx.alloc::<f64>(2).unwrap();
    src.put(0, &[2.5, -1.0], 0).unwrap();
    world.reduce(&dst, 0, &src, 0, 2, ReduceOp::Max).unwrap();
    let mut r = [0.0; 2];
    dst.get(0, &mut r, 0).unwrap();
    assert_eq!(r, [2.5, -1.0]);
    world.broadcast(&dst, 1, &src, 0, 1, 0).unwrap();
    assert_eq!(dst.g(1, 0).unwrap(), 2.5);
    world.fcollect(&dst, 0, &src, 1, 1).unwrap();
    world.collect(&dst, 1, &src, 0, 1).unwrap();
    world.alltoall(&dst, 0, &src, 0, 1).unwrap();
    // alltoallv to itself with i64 counts; a negative count is a huge one
    let sc = ctx.alloc::<i64>(1).unwrap();
    let rc = ctx.alloc::<i64>(2).unwrap();
    sc.p(0, 2, 0).unwrap();
    world
        .alltoallv(&dst, 0, 2, &src, 0, 2, &sc, 0, &rc, 0)
        .unwrap();
    let mut got_rc = [0i64; 2];
    rc.get(0, &mut got_rc, 0).unwrap();
    assert_eq!(got_rc, [2, 0], "alltoallv recv count and offset");
    sc.p(0, -1, 0).unwrap();
    let e = world
        .alltoallv(&dst, 0, 2, &src, 0, 2, &sc, 0, &rc, 0)
        .unwrap_err();
    assert!(matches!(e, Error::OutOfBounds(_)), "{e:?}");
    let e = world
        .alltoallv(&dst, 0, 2, &src, 0, 2, &rc, 1, &rc, 0)
        .unwrap_err();
    assert!(
        matches!(e, Error::InvalidArg(_)),
        "overlapping counts: {e:?}"
    );
    world
        .reducescatter(&dst, 1, &src, 1, 1, ReduceOp::Sum)
        .unwrap();
    dst.get(0, &mut r, 0).unwrap();
    assert_eq!(r, [2.5, -1.0]);
    let e = world
        .reduce(&dst, 0, &src, 0, 3, ReduceOp::Sum)
        .unwrap_err();
    assert!(matches!(e, Error::OutOfBounds(_)), "{e:?}");
    let e = world
        .reduce(&dst, 0, &src, 0, 1, ReduceOp::Xor)
        .unwrap_err();
    assert!(matches!(e, Error::NotSupported(_)), "{e:?}");
    world.barrier().unwrap();
    world.sync().unwrap();
    ctx.barrier_all().unwrap();
    ctx.sync_all().unwrap();
    ctx.fence().unwrap();
    ctx.quiet().unwrap();

    let sub = world
        .split_strided(0, 1, 1)
        .unwrap()
        .expect("PE 0 is a member");
    assert_eq!(sub.n_pes(), 1);
    assert_eq!(world.translate_pe(0, &sub), Some(0));
    assert!(matches!(
        world.split_strided(0, 0, 1),
        Err(Error::InvalidArg(_))
    ));
    let (x, y) = world.split_2d(1).unwrap();
    x.unwrap().destroy().unwrap();
    y.unwrap().destroy().unwrap();
    sub.destroy().unwrap();
    let e = world.destroy().unwrap_err();
    assert!(
        matches!(e, Error::InvalidArg(_)),
        "a predefined team is not destroyed: {e:?}"
    );
    ctx.world().barrier().unwrap();

    // A buffer dropped without free is not freed behind our back (free is
    // collective): it stays allocated until finalize releases it.
    let used = ctx.query().unwrap().heap_used;
    let leaked = ctx.alloc::<u8>(4096).unwrap();
    let with = ctx.query().unwrap().heap_used;
    assert!(with >= used + 4096, "{used} -> {with}");
    drop(leaked);
    assert_eq!(ctx.query().unwrap().heap_used, with, "drop did not free");
    for b in [src, dst] {
        b.free().unwrap();
    }
    for b in [sc, rc] {
        b.free().unwrap();
    }
    data.free().unwrap();
    sig.free().unwrap();
    a.free().unwrap();
    ctx.finalize().unwrap();
}

#[test]
fn threads_share_a_context() {
    let ctx = ctx();
    let buf = ctx.alloc::<u32>(1).unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..100 {
                    buf.atomic_inc(0, 0).unwrap();
                }
            });
        }
    });
    assert_eq!(buf.g(0, 0).unwrap(), 400);
    buf.free().unwrap();
    ctx.finalize().unwrap();
}

#[test]
fn funneled_contexts_refuse_other_threads() {
    common::use_build_runtime();
    let ctx = Context::builder()
        .backend(Backend::Host)
        .bootstrap(Bootstrap::Single)
        .thread_level(symm::ThreadLevel::Funneled)
        .build()
        .unwrap();
    assert_eq!(
        ctx.query().unwrap().thread_level,
        symm::ThreadLevel::Funneled
    );
    let buf = ctx.alloc::<i16>(2).unwrap();
    buf.p(1, -3, 0).unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            let e = buf.g(1, 0).unwrap_err();
            assert!(matches!(e, Error::ThreadLevel(_)), "{e:?}");
            assert!(!e.message().is_empty());
        });
    });
    assert_eq!(buf.g(1, 0).unwrap(), -3);
    buf.free().unwrap();
    ctx.finalize().unwrap();
}

/// Two PEs of one job in two threads of this process, joined by a unique id.
#[test]
fn unique_id_bootstrap_joins_two_contexts() {
    common::use_build_runtime();
    let id = symm::UniqueId::new().unwrap();
    let bytes = *id.as_bytes();
    let results: Vec<i64> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..2)
            .map(|rank| {
                s.spawn(move || {
                    let ctx = Context::builder()
                        .backend(Backend::Host)
                        .unique_id(symm::UniqueId::from_bytes(bytes), rank, 2)
                        .build()
                        .unwrap();
                    assert_eq!((ctx.my_pe(), ctx.n_pes()), (rank, 2));
                    let src = ctx.alloc::<i64>(1).unwrap();
                    let dst = ctx.alloc::<i64>(1).unwrap();
                    src.p(0, 10 + rank as i64, rank).unwrap();
                    ctx.world()
                        .reduce(&dst, 0, &src, 0, 1, ReduceOp::Sum)
                        .unwrap();
                    let v = dst.g(0, rank).unwrap();
                    src.free().unwrap();
                    dst.free().unwrap();
                    ctx.finalize().unwrap();
                    v
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(results, [21, 21]);
}

/// The stream forms on the host backend (no GPU here: the GPU path of these
/// wrappers runs only in the CUDA suite of the C API). The host backend
/// ignores the stream and completes each operation before returning; each
/// form must reach its C entry with its arguments in place (data checked),
/// CUDA's special handles (1: CU_STREAM_LEGACY, 2: CU_STREAM_PER_THREAD) must
/// pass through as plain values, and a bad range is an error.
#[test]
fn stream_forms_on_the_host_backend() {
    let ctx = ctx();
    let w = ctx.world();
    let b = ctx.alloc::<u32>(4).unwrap();
    let sig = ctx.alloc::<u64>(1).unwrap();
    let s: symm::Stream = std::ptr::null_mut();
    let src = [9u32, 8, 7, 6];
    let mut dst = [0u32; 4];
    // SAFETY: host backend (the stream is not used); src and dst outlive the
    // calls, which complete before returning here, and the quiets below.
    unsafe {
        b.put_on_stream(0, src.as_ptr(), 2, 0, s).unwrap();
        b.put_nbi_on_stream(2, src[2..].as_ptr(), 2, 0, s).unwrap();
        b.p_on_stream(3, 5, 0, s).unwrap();
        ctx.quiet_on_stream(s).unwrap();
        b.get_on_stream(0, dst.as_mut_ptr(), 2, 0, s).unwrap();
        b.get_nbi_on_stream(2, dst[2..].as_mut_ptr(), 2, 0, s)
            .unwrap();
        ctx.quiet_on_stream(s).unwrap();
    }
    assert_eq!(dst, [9, 8, 7, 5], "stream RMA");
    // SAFETY: as above.
    unsafe {
        b.put_signal_on_stream(0, src[3..].as_ptr(), 1, &sig, 0, 2, SignalOp::Set, 0, s)
            .unwrap();
        sig.signal_op_on_stream(0, 3, SignalOp::Add, 0, s).unwrap();
        sig.signal_wait_until_on_stream(0, Cmp::Eq, 5, s).unwrap();
    }
    assert_eq!(sig.signal_fetch(0).unwrap(), 5);
    assert_eq!(b.g(0, 0).unwrap(), 6, "put_signal_on_stream's data");
    let p = b.as_ptr().unwrap();
    let mut raw = [0u8; 4];
    // SAFETY: p is b's local copy (4 u32); raw outlives the calls.
    unsafe {
        ctx.getmem_on_stream(raw.as_mut_ptr().cast(), p.cast(), 4, 0, s)
            .unwrap();
        assert_eq!(raw, 6u32.to_ne_bytes(), "getmem_on_stream");
        ctx.putmem_on_stream(p.add(1).cast(), raw.as_ptr().cast(), 4, 0, s)
            .unwrap();
        ctx.barrier_all_on_stream(s).unwrap();
        w.barrier_on_stream(s).unwrap();
        w.sync_on_stream(s).unwrap();
    }
    let mut all = [0u32; 4];
    b.get(0, &mut all, 0).unwrap();
    assert_eq!(all, [6, 6, 7, 5], "putmem_on_stream");

    let d = ctx.alloc::<u32>(4).unwrap();
    let sc = ctx.alloc::<u64>(1).unwrap();
    let rc = ctx.alloc::<u64>(2).unwrap();
    sc.p(0, 4, 0).unwrap();
    let expect = |what: &str| {
        let mut got = [0u32; 4];
        d.get(0, &mut got, 0).unwrap();
        assert_eq!(got, [6, 6, 7, 5], "{what}");
        d.put(0, &[0; 4], 0).unwrap();
    };
    // SAFETY: buffers of this context; the host backend completes each call.
    unsafe {
        w.broadcast_on_stream(&d, 0, &b, 0, 4, 0, s).unwrap();
        expect("broadcast_on_stream");
        w.fcollect_on_stream(&d, 0, &b, 0, 4, s).unwrap();
        expect("fcollect_on_stream");
        w.alltoall_on_stream(&d, 0, &b, 0, 4, s).unwrap();
        expect("alltoall_on_stream");
        w.reduce_on_stream(&d, 0, &b, 0, 4, ReduceOp::Sum, s)
            .unwrap();
        expect("reduce_on_stream");
        w.reducescatter_on_stream(&d, 0, &b, 0, 4, ReduceOp::Prod, s)
            .unwrap();
        expect("reducescatter_on_stream");
        w.alltoallv_on_stream(&d, 0, 4, &b, 0, 4, &sc, 0, &rc, 0, s)
            .unwrap();
        expect("alltoallv_on_stream");
        assert_eq!([rc.g(0, 0).unwrap(), rc.g(1, 0).unwrap()], [4, 0]);
        // dst too small: nothing copied, the receive counts still written
        rc.put(0, &[9, 9], 0).unwrap();
        let e = w
            .alltoallv_on_stream(&d, 0, 3, &b, 0, 4, &sc, 0, &rc, 0, s)
            .unwrap_err();
        assert!(matches!(e, Error::OutOfBounds(_)), "{e:?}");
        assert_eq!([rc.g(0, 0).unwrap(), rc.g(1, 0).unwrap()], [4, 0]);
        assert_eq!(d.g(0, 0).unwrap(), 0, "nothing copied");

        // CUDA's special stream handles are values, not pointers.
        ctx.quiet_on_stream(1 as symm::Stream).unwrap();
        b.p_on_stream(0, 9, 0, 2 as symm::Stream).unwrap();
        assert_eq!(b.g(0, 0).unwrap(), 9);

        // A range past the end is an error, nothing written.
        let e = b.put_on_stream(3, src.as_ptr(), 4, 0, s).unwrap_err();
        assert!(matches!(e, Error::OutOfBounds(_)), "{e:?}");
        let e = w.broadcast_on_stream(&d, 2, &b, 0, 4, 0, s).unwrap_err();
        assert!(matches!(e, Error::OutOfBounds(_)), "{e:?}");
    }
    assert_eq!(b.g(3, 0).unwrap(), 5);
    assert!(ctx.async_error(true).unwrap().is_none());
    drop(w);
    d.free().unwrap();
    for c in [sc, rc] {
        c.free().unwrap();
    }
    sig.free().unwrap();
    b.free().unwrap();
    ctx.finalize().unwrap();
}
