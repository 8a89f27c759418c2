package symm

// #include "symm_go.h"
import "C"

import (
	"math"
	"sync"
	"time"
	"unsafe"
)

// UniqueID names a job for BootstrapUID (symm_unique_id): made by GetUniqueID
// on the PE that will be rank 0 and sent to the others over the application's
// own channel.
type UniqueID [UniqueIDBytes]byte

// GetUniqueID makes the id of a new job. The process that made it must then
// join as rank 0 (WithUniqueID(id, 0, n)).
func GetUniqueID() (UniqueID, error) {
	var cid C.symm_unique_id
	err := call("symm_get_unique_id", func() C.symm_status { return C.symm_get_unique_id(&cid) })
	var id UniqueID
	if err == nil {
		id = *(*UniqueID)(unsafe.Pointer(&cid.bytes[0]))
	}
	return id, err
}

// InitAttr holds the parameters of Init (symm_init_attr). Start from
// DefaultInitAttr, or pass Options to Init.
type InitAttr struct {
	Backend     Backend       // BackendAuto: CUDA with a usable GPU, else host ($SYMM_BACKEND overrides)
	Bootstrap   Bootstrap     // how the PE finds its job
	ThreadLevel ThreadLevel   // requested level (default ThreadMultiple)
	HeapCap     uint64        // max heap bytes per PE; 0 = default ($SYMM_HEAP_CAP)
	Rank        int           // BootstrapUID: this PE's rank in [0, NPEs)
	NPEs        int           // BootstrapUID: number of PEs
	Device      int           // CUDA device ordinal; -1 = the local rank
	Timeout     time.Duration // bootstrap and peer-failure timeout (ms resolution); 0 = default
	UniqueID    UniqueID      // BootstrapUID: the id from GetUniqueID
}

// DefaultInitAttr is symm's defaults (symm_init_attr_init: answered by the
// loader, works without a runtime): BackendAuto, BootstrapAuto,
// ThreadMultiple, default heap cap and timeout, Device -1.
func DefaultInitAttr() (InitAttr, error) {
	var c C.symm_init_attr
	err := call("symm_init_attr_init", func() C.symm_status {
		return C.symm_init_attr_init(&c, C.uint32_t(C.sizeof_symm_init_attr))
	})
	if err != nil {
		return InitAttr{}, err
	}
	return InitAttr{
		Backend:     Backend(c.backend),
		Bootstrap:   Bootstrap(c.bootstrap),
		ThreadLevel: ThreadLevel(c.thread_level),
		HeapCap:     uint64(c.heap_cap),
		Rank:        int(c.rank),
		NPEs:        int(c.n_pes),
		Device:      int(c.device),
		Timeout:     time.Duration(c.timeout_ms) * time.Millisecond,
		UniqueID:    *(*UniqueID)(unsafe.Pointer(&c.unique_id.bytes[0])),
	}, nil
}

// toC fills a C symm_init_attr (struct_size from symm_init_attr_init).
func (a *InitAttr) toC() (C.symm_init_attr, error) {
	var c C.symm_init_attr
	if err := call("symm_init_attr_init", func() C.symm_status {
		return C.symm_init_attr_init(&c, C.uint32_t(C.sizeof_symm_init_attr))
	}); err != nil {
		return c, err
	}
	if a.Timeout < 0 {
		return c, argError("symm_init", ErrInvalidArg, "negative timeout %v", a.Timeout)
	}
	ms := (a.Timeout + time.Millisecond - 1) / time.Millisecond
	if ms > math.MaxUint32 {
		ms = math.MaxUint32
	}
	c.backend = C.uint32_t(a.Backend)
	c.bootstrap = C.uint32_t(a.Bootstrap)
	c.thread_level = C.uint32_t(a.ThreadLevel)
	c.heap_cap = C.uint64_t(a.HeapCap)
	c.rank = cpe(a.Rank)
	c.n_pes = cpe(a.NPEs)
	c.device = cpe(a.Device)
	c.timeout_ms = C.uint32_t(ms)
	*(*UniqueID)(unsafe.Pointer(&c.unique_id.bytes[0])) = a.UniqueID
	return c, nil
}

// Option changes one parameter of Init.
type Option func(*InitAttr)

// WithBackend chooses the backend.
func WithBackend(b Backend) Option { return func(a *InitAttr) { a.Backend = b } }

// WithBootstrap chooses how the PE finds its job.
func WithBootstrap(b Bootstrap) Option { return func(a *InitAttr) { a.Bootstrap = b } }

// WithThreadLevel requests a thread level (default ThreadMultiple).
func WithThreadLevel(l ThreadLevel) Option { return func(a *InitAttr) { a.ThreadLevel = l } }

// WithHeapCap caps the symmetric heap of each PE at bytes.
func WithHeapCap(bytes uint64) Option { return func(a *InitAttr) { a.HeapCap = bytes } }

// WithDevice chooses the CUDA device ordinal (-1: the local rank).
func WithDevice(ordinal int) Option { return func(a *InitAttr) { a.Device = ordinal } }

// WithTimeout sets the bootstrap and peer-failure timeout.
func WithTimeout(d time.Duration) Option { return func(a *InitAttr) { a.Timeout = d } }

// WithUniqueID joins the job named by id as rank of nPEs (BootstrapUID).
func WithUniqueID(id UniqueID, rank, nPEs int) Option {
	return func(a *InitAttr) {
		a.Bootstrap, a.UniqueID, a.Rank, a.NPEs = BootstrapUID, id, rank, nPEs
	}
}

// Context is one membership of a job with its symmetric heap (symm_ctx).
// Several may exist in one process. Its methods may be called from any
// goroutine (at the default ThreadMultiple); collectives on one team are
// serialised inside this package, but every PE must still issue them in the
// same order.
//
// Finalize is collective and explicit: a Context that is never finalized is
// released by the operating system when the process exits.
type Context struct {
	h     C.symm_ctx
	coll  sync.Mutex // context-wide collectives, and the world team's
	split sync.Mutex // team splits and destroys
	teams [4]*Team   // the predefined teams
}

// Init joins a job and sets up the symmetric heap, with symm's defaults
// changed by opts. Collective over every PE of the job. Without a runtime it
// returns an error wrapping ErrLibraryNotFound.
func Init(opts ...Option) (*Context, error) {
	attr, err := DefaultInitAttr()
	if err != nil {
		return nil, err
	}
	for _, o := range opts {
		o(&attr)
	}
	ca, err := attr.toC()
	if err != nil {
		return nil, err
	}
	c := &Context{}
	var h C.symm_ctx
	if err := call("symm_init", func() C.symm_status { return C.symm_init(&ca, &h) }); err != nil {
		return nil, err
	}
	c.h = h
	for i := range c.teams {
		var th C.symm_team
		if err := call("symm_team_get", func() C.symm_status {
			return C.symm_team_get(h, C.uint32_t(i), &th)
		}); err != nil {
			return nil, err // cannot happen for a live context
		}
		t := &Team{h: th, ctx: c, predefined: true, mu: new(sync.Mutex)}
		if PredefinedTeam(i) == TeamWorld {
			t.mu = &c.coll
		}
		c.teams[i] = t
	}
	return c, nil
}

func (c *Context) handle() C.symm_ctx {
	if c == nil {
		return nil
	}
	return c.h
}

// collLock takes the lock of context-wide collectives (a nil Context gets a
// private one: its calls fail with ErrInvalidHandle).
func (c *Context) collLock() *sync.Mutex {
	mu := new(sync.Mutex)
	if c != nil {
		mu = &c.coll
	}
	mu.Lock()
	return mu
}

// Finalize leaves the job: a barrier, then everything the context holds is
// released (buffers not freed too). Collective. If a peer died it still
// releases every local resource and returns ErrPeerFailed. The Context, its
// buffers and teams are unusable afterwards (ErrInvalidHandle); a second
// Finalize does nothing.
func (c *Context) Finalize() error {
	if c == nil {
		return nil
	}
	mu := c.collLock()
	defer mu.Unlock()
	h := c.h
	err := call("symm_finalize", func() C.symm_status { return C.symm_finalize(&h) })
	c.h = h
	return err
}

// MyPE is this PE's number in [0, NPEs()), or -1 for a finalized context.
func (c *Context) MyPE() int { return int(C.symm_my_pe(c.handle())) }

// NPEs is the number of PEs in the job, or -1 for a finalized context.
func (c *Context) NPEs() int { return int(C.symm_n_pes(c.handle())) }

// Info describes a context (symm_ctx_info).
type Info struct {
	Backend     Backend     // BackendHost or BackendCUDA
	ThreadLevel ThreadLevel // the level provided
	MyPE        int
	NPEs        int
	LocalPE     int    // rank among the PEs of this host
	LocalNPEs   int    // PEs on this host
	Device      int    // CUDA ordinal, -1 on the host backend
	HeapCap     uint64 // bytes
	HeapMapped  uint64 // bytes currently backed
	HeapUsed    uint64 // bytes in live allocations
}

// Query describes the context.
func (c *Context) Query() (Info, error) {
	var ci C.symm_ctx_info
	ci.struct_size = C.uint32_t(C.sizeof_symm_ctx_info)
	if err := call("symm_ctx_query", func() C.symm_status { return C.symm_ctx_query(c.handle(), &ci) }); err != nil {
		return Info{}, err
	}
	return Info{
		Backend:     Backend(ci.backend),
		ThreadLevel: ThreadLevel(ci.thread_level),
		MyPE:        int(ci.my_pe),
		NPEs:        int(ci.n_pes),
		LocalPE:     int(ci.local_pe),
		LocalNPEs:   int(ci.local_n_pes),
		Device:      int(ci.device),
		HeapCap:     uint64(ci.heap_cap),
		HeapMapped:  uint64(ci.heap_mapped),
		HeapUsed:    uint64(ci.heap_used),
	}, nil
}

// AsyncError returns the first failure recorded on the context after its call
// had returned (a stream operation, a GPU-side wait that gave up), as an
// *Error with Op "async", or nil when none is recorded; clear resets the
// record. err is the failure of this call itself.
func (c *Context) AsyncError(clear bool) (recorded error, err error) {
	var flags C.uint32_t
	if clear {
		flags = C.SYMM_ASYNC_CLEAR
	}
	var st C.symm_status
	msg := make([]byte, 1024)
	err = call("symm_ctx_async_error", func() C.symm_status {
		return C.symm_ctx_async_error(c.handle(), flags, C.uint64_t(len(msg)), &st,
			(*C.char)(unsafe.Pointer(&msg[0])))
	})
	if err != nil || st == C.SYMM_SUCCESS {
		return nil, err
	}
	return &Error{Op: "async", Status: Status(st), Message: C.GoString((*C.char)(unsafe.Pointer(&msg[0])))}, nil
}

// Team is the predefined team which of the context.
func (c *Context) Team(which PredefinedTeam) (*Team, error) {
	if c == nil || int(which) >= len(c.teams) {
		// Let the runtime answer (and word) the error.
		var th C.symm_team
		err := call("symm_team_get", func() C.symm_status {
			return C.symm_team_get(c.handle(), C.uint32_t(which), &th)
		})
		if err == nil {
			err = argError("symm_team_get", ErrInvalidArg, "unknown team %d", which)
		}
		return nil, err
	}
	return c.teams[which], nil
}

// World is the team of every PE of the context (TeamWorld); nil for a nil
// Context (whose calls, like a nil Team's, return ErrInvalidHandle).
func (c *Context) World() *Team {
	if c == nil {
		return nil
	}
	return c.teams[TeamWorld]
}

// ------------------------------------------------ ordering and barriers ----

// Quiet completes every operation this PE issued on the context: puts are
// visible at their targets, NBI gets and fetches are written.
func (c *Context) Quiet() error {
	return call("symm_quiet", func() C.symm_status { return C.symm_quiet(c.handle()) })
}

// Fence orders puts and atomics to each PE: those issued before it are
// delivered before those issued after it.
func (c *Context) Fence() error {
	return call("symm_fence", func() C.symm_status { return C.symm_fence(c.handle()) })
}

// BarrierAll quiets, then waits until every PE of the context arrived.
// Collective.
func (c *Context) BarrierAll() error {
	mu := c.collLock()
	defer mu.Unlock()
	return call("symm_barrier_all", func() C.symm_status { return C.symm_barrier_all(c.handle()) })
}

// SyncAll waits until every PE of the context arrived (no quiet). Collective.
func (c *Context) SyncAll() error {
	mu := c.collLock()
	defer mu.Unlock()
	return call("symm_sync_all", func() C.symm_status { return C.symm_sync_all(c.handle()) })
}

// QuietOnStream enqueues a quiet on stream s.
func (c *Context) QuietOnStream(s Stream) error {
	return call("symm_quiet_on_stream", func() C.symm_status {
		return C.symm_go_quiet_on_stream(c.handle(), C.uintptr_t(s))
	})
}

// BarrierAllOnStream enqueues a barrier over the context on stream s.
// Collective.
func (c *Context) BarrierAllOnStream(s Stream) error {
	mu := c.collLock()
	defer mu.Unlock()
	return call("symm_barrier_all_on_stream", func() C.symm_status {
		return C.symm_go_barrier_all_on_stream(c.handle(), C.uintptr_t(s))
	})
}

// -------------------------------------------- byte RMA on symmetric addresses ----

// A symmetric address is a local address inside this PE's heap, e.g. a
// Buffer's Ptr plus a byte offset (unsafe.Add); it names the same offset on
// every PE. Ranges outside the heap give ErrOutOfBounds.

// PutMem copies src to the symmetric address dstSym on pe.
func (c *Context) PutMem(dstSym unsafe.Pointer, src []byte, pe int) error {
	return call("symm_putmem", func() C.symm_status {
		return C.symm_putmem(c.handle(), dstSym, sptr(src), C.uint64_t(len(src)), cpe(pe))
	})
}

// GetMem copies len(dst) bytes from the symmetric address srcSym on pe.
func (c *Context) GetMem(dst []byte, srcSym unsafe.Pointer, pe int) error {
	return call("symm_getmem", func() C.symm_status {
		return C.symm_getmem(c.handle(), sptr(dst), srcSym, C.uint64_t(len(dst)), cpe(pe))
	})
}

// PutMemNBI starts a PutMem; src is read until the next Quiet.
func (c *Context) PutMemNBI(dstSym unsafe.Pointer, src Span[byte], pe int) error {
	return call("symm_putmem_nbi", func() C.symm_status {
		return C.symm_putmem_nbi(c.handle(), dstSym, src.ptr(), C.uint64_t(src.n), cpe(pe))
	})
}

// GetMemNBI starts a GetMem; dst is written until the next Quiet.
func (c *Context) GetMemNBI(dst Span[byte], srcSym unsafe.Pointer, pe int) error {
	return call("symm_getmem_nbi", func() C.symm_status {
		return C.symm_getmem_nbi(c.handle(), dst.ptr(), srcSym, C.uint64_t(dst.n), cpe(pe))
	})
}

// PutMemOnStream enqueues a PutMem on stream s; src is read when the stream
// reaches it.
func (c *Context) PutMemOnStream(dstSym unsafe.Pointer, src Span[byte], pe int, s Stream) error {
	return call("symm_putmem_on_stream", func() C.symm_status {
		return C.symm_go_putmem_on_stream(c.handle(), dstSym, src.ptr(), C.uint64_t(src.n), cpe(pe), C.uintptr_t(s))
	})
}

// GetMemOnStream enqueues a GetMem on stream s; dst is written when the
// stream reaches it.
func (c *Context) GetMemOnStream(dst Span[byte], srcSym unsafe.Pointer, pe int, s Stream) error {
	return call("symm_getmem_on_stream", func() C.symm_status {
		return C.symm_go_getmem_on_stream(c.handle(), dst.ptr(), srcSym, C.uint64_t(dst.n), cpe(pe), C.uintptr_t(s))
	})
}

// Ptr is the address at which this process can load and store pe's copy of
// the symmetric address sym, or nil when pe is not load/store reachable.
func (c *Context) Ptr(sym unsafe.Pointer, pe int) (unsafe.Pointer, error) {
	var p unsafe.Pointer
	err := call("symm_ptr", func() C.symm_status { return C.symm_ptr(c.handle(), sym, cpe(pe), &p) })
	return p, err
}

// ------------------------------------------------------- device context ----

// DeviceContext describes the context to GPU code (symm_device_ctx, see
// symm_device.cuh); addresses are device addresses. Raw is the C struct's
// bytes, to copy into kernel parameter or device memory.
type DeviceContext struct {
	MyPE, NPEs, TeamSlots int
	HeapCap               uint64
	HeapBase              uintptr
	SlotBytes             uint64
	PeerTable             uintptr
	PeerBase              [DeviceFastPEs]uintptr
	FailWord              uintptr // ABI 1.1: 0 from a 1.0 runtime
	DeviceABI, NRings     uint32  // ABI 1.3: the GPU proxy's rings (0 from an older runtime)
	Rings                 uintptr // ABI 1.3: device array of NRings ring handles
	Raw                   []byte
}

// DeviceContext fills a DeviceContext (CUDA backend; ErrNotSupported on the
// host backend). Valid until Finalize.
func (c *Context) DeviceContext() (DeviceContext, error) {
	var d C.symm_device_ctx
	d.struct_size = C.uint32_t(C.sizeof_symm_device_ctx)
	if err := call("symm_device_ctx_get", func() C.symm_status {
		return C.symm_device_ctx_get(c.handle(), &d)
	}); err != nil {
		return DeviceContext{}, err
	}
	out := DeviceContext{
		MyPE: int(d.my_pe), NPEs: int(d.n_pes), TeamSlots: int(d.team_slots),
		HeapCap: uint64(d.heap_cap), HeapBase: uintptr(d.heap_base), SlotBytes: uint64(d.slot_bytes),
		PeerTable: uintptr(unsafe.Pointer(d.peer_table)),
		FailWord:  uintptr(unsafe.Pointer(d.fail_word)),
		DeviceABI: uint32(d.device_abi), NRings: uint32(d.n_rings),
		Rings: uintptr(d.rings),
		Raw:   C.GoBytes(unsafe.Pointer(&d), C.int(C.sizeof_symm_device_ctx)),
	}
	for i := range out.PeerBase {
		out.PeerBase[i] = uintptr(d.peer_base[i])
	}
	return out, nil
}
