// Package symm is the Go binding of symm: one-sided communication (put, get,
// atomics, signals, collectives) over a symmetric heap shared by the
// processing elements (PEs) of a job, on CPUs (host backend) or GPUs (CUDA
// backend).
//
// The package compiles the symm loader in through cgo (from the checkout's
// loader/, or csrc/ of a copy made self-contained by sync_csrc.sh), so building a program needs a C compiler but no installed
// symm, and the program always starts. The runtime (libsymm_runtime.so.1) is
// opened on the first call that needs it, searched in this order:
// $SYMM_RUNTIME, the path given to SetRuntimePath, the program's own
// directory, the system library path. When it is missing that call returns an
// error wrapping ErrLibraryNotFound, and Probe says so up front:
//
//	ctx, err := symm.Init() // joins the job started by `symmrun -n 4 ./prog`
//	if errors.Is(err, symm.ErrLibraryNotFound) {
//		// run single-process
//	}
//	me, n := ctx.MyPE(), ctx.NPEs()
//	buf, err := symm.Alloc[int64](ctx, 1)           // collective
//	err = buf.Put(0, []int64{int64(me)}, (me+1)%n) // into the right neighbour
//	err = ctx.BarrierAll()
//	sum, err := symm.Alloc[int64](ctx, 1)
//	err = symm.Reduce(ctx.World(), sum, 0, buf, 0, 1, symm.OpSum)
//	err = sum.Free()      // collective
//	err = buf.Free()      // collective
//	err = ctx.Finalize()  // collective
//
// # Errors
//
// Every call that can fail returns an error: an *Error holding the C function
// (Op), the status code (Status; Code and Name) and the message symm_last_error
// gave on the calling thread right after the call. It unwraps to its Status,
// and each Status is a sentinel error, so errors.Is(err, symm.ErrOutOfBounds)
// tests the code and errors.As(err, &e) gets the details. Bad arguments (an
// index outside a buffer, a wrong PE) are errors, never panics. The binding
// locks the goroutine to its OS thread (runtime.LockOSThread) for the call and
// the read of the thread-local message.
//
// A negative index or count is refused by the binding: ErrOutOfBounds for an
// index, ErrInvalidArg for a count. A collective (Alloc too) still makes its
// C call on that PE, with a value the runtime rejects, so that its peers are
// not left waiting for a PE that never came: they get what the runtime gives
// for one PE's bad argument (ErrMismatch naming that PE at once, where the
// runtime exchanges the PEs' verdicts: Alloc and every blocking collective
// on every backend; the OnStream forms on the host backend).
//
// # Resources: explicit, collective releases
//
// Freeing a buffer (Buffer.Free), destroying a team (Team.Destroy) and
// finalizing a context (Context.Finalize) are collective: every PE must make
// the same call. The package never makes one behind your back and sets no
// finalizers: a Buffer that is never freed or a split Team that is never
// destroyed stays allocated until Finalize releases everything the context
// holds; a Context that is never finalized is released by the operating
// system when the process exits. (A collective run by the garbage collector
// would run at a different moment on each PE, or on an error path where the
// other PEs are not making it, and hang or mismatch the job.) HostMem is
// freed explicitly too (HostMem.Free): the collector cannot see whether symm
// still uses it.
//
// # Kept pointers
//
// Blocking calls take Go slices (Put, Get, PutSignal, the waits, PutMem...):
// they keep no pointer after returning. Calls that use local memory after
// returning take a Span instead, never a Go slice (the cgo pointer rules):
// the NBI forms (PutNBI, GetNBI, PutSignalNBI, AtomicNBI's fetched value,
// PutMemNBI, GetMemNBI) read or write it until the next Quiet or barrier on
// the context; the OnStream forms until the stream reaches the operation;
// Register until Buffer.Free. A Span is part of a HostMem (AllocHost: C heap
// memory) or memory obtained elsewhere (CUDA device memory, page-locked host
// memory) wrapped by ExternalSpan. Keep it valid, and free it only after the
// quiet, stream work or Free that ends its use.
//
// # Threads and goroutines
//
// Contexts are created at ThreadMultiple by default: every method may be
// called from any goroutine. Collectives on one team (and on the context,
// which this package serialises with the world team's) are serialised by a
// lock inside the package, and team splits and destroys by a lock per
// context; every PE must still issue a team's collectives in the same order.
// ThreadFunneled is enforced by the runtime per OS thread: lock the goroutine
// that calls Init to its thread (runtime.LockOSThread) and make every call
// from it; calls from other threads get ErrThreadLevel. ThreadSingle and
// ThreadSerialized record your promise and cost nothing.
//
// # Streams
//
// The OnStream forms take a raw CUDA stream as a Stream (a CUstream or
// cudaStream_t as uintptr; 0 is the legacy default stream). On the CUDA
// backend they are enqueued and return at once, and failures while the
// stream runs are recorded on the context: Context.AsyncError. On the host
// backend they complete before returning.
package symm
