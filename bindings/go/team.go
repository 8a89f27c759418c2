package symm

// #include "symm_go.h"
import "C"

import (
	"sync"
	"unsafe"
)

// Team is an ordered subset of a context's PEs (symm_team): one of the
// predefined teams (Context.Team, Context.World) or a team split from one.
// Collectives on a team are serialised by a lock inside this package (the C
// rule "collectives on one team must not run concurrently"); every PE must
// still issue a team's collectives in the same order.
//
// Destroy is collective and explicit: a split team that is never destroyed
// keeps its team slot until the context is finalized. Predefined teams belong
// to the context and cannot be destroyed.
type Team struct {
	h          C.symm_team
	ctx        *Context
	predefined bool
	mu         *sync.Mutex // collectives on this team
}

func (t *Team) handle() C.symm_team {
	if t == nil {
		return nil
	}
	return t.h
}

// lock takes the team's collective lock (a nil Team gets a private one).
func (t *Team) lock() *sync.Mutex {
	mu := new(sync.Mutex)
	if t != nil {
		mu = t.mu
	}
	mu.Lock()
	return mu
}

// splitLocks takes the team's collective lock and its context's split lock
// (splits and destroys on one context must not run concurrently); the result
// releases both.
func (t *Team) splitLocks() (unlock func()) {
	mu := t.lock()
	var sp *sync.Mutex
	if t != nil && t.ctx != nil {
		sp = &t.ctx.split
		sp.Lock()
	}
	return func() {
		if sp != nil {
			sp.Unlock()
		}
		mu.Unlock()
	}
}

// Context is the team's context.
func (t *Team) Context() *Context { return t.ctx }

// MyPE is this PE's number in the team, -1 for a destroyed team.
func (t *Team) MyPE() int { return int(C.symm_team_my_pe(t.handle())) }

// NPEs is the number of PEs in the team, -1 for a destroyed team.
func (t *Team) NPEs() int { return int(C.symm_team_n_pes(t.handle())) }

// TranslatePE is the number in dst of this team's PE pe, or -1 when that PE is
// not in dst (or an argument is invalid).
func (t *Team) TranslatePE(pe int, dst *Team) int {
	return int(C.symm_team_translate_pe(t.handle(), cpe(pe), dst.handle()))
}

// TeamConfig is a team's configuration (symm_team_config).
type TeamConfig struct {
	NumContexts int // OpenSHMEM hint; recorded and reported, >= 0
}

// DefaultTeamConfig is symm's default team configuration
// (symm_team_config_init: answered by the loader, works without a runtime).
func DefaultTeamConfig() (TeamConfig, error) {
	c, err := teamConfigC(nil)
	return TeamConfig{NumContexts: int(c.num_contexts)}, err
}

// teamConfigC is the C configuration for cfg (nil: the defaults).
func teamConfigC(cfg *TeamConfig) (C.symm_team_config, error) {
	var c C.symm_team_config
	err := call("symm_team_config_init", func() C.symm_status {
		return C.symm_team_config_init(&c, C.uint32_t(C.sizeof_symm_team_config))
	})
	if err == nil && cfg != nil {
		c.num_contexts = cpe(cfg.NumContexts)
	}
	return c, err
}

// Config is the team's configuration.
func (t *Team) Config() (TeamConfig, error) {
	var c C.symm_team_config
	c.struct_size = C.uint32_t(C.sizeof_symm_team_config)
	err := call("symm_team_get_config", func() C.symm_status { return C.symm_team_get_config(t.handle(), &c) })
	return TeamConfig{NumContexts: int(c.num_contexts)}, err
}

// SplitStrided makes a team of this team's PEs start, start+stride, ... (size
// PEs; stride may be negative, not 0). cfg may be nil (defaults). Collective
// over this team. A PE that is not a member gets a nil *Team and a nil error.
func (t *Team) SplitStrided(start, stride, size int, cfg *TeamConfig) (*Team, error) {
	c, err := teamConfigC(cfg)
	if err != nil {
		return nil, err
	}
	defer t.splitLocks()()
	var h C.symm_team
	err = call("symm_team_split_strided", func() C.symm_status {
		return C.symm_team_split_strided(t.handle(), cpe(start), cpe(stride), cpe(size), &c, &h)
	})
	return t.child(h), err
}

// Split2D splits this team into a grid of rows of xrange PEs: x is this PE's
// row, y its column (the last row may be short). Configs may be nil.
// Collective over this team.
func (t *Team) Split2D(xrange int, xcfg, ycfg *TeamConfig) (x, y *Team, err error) {
	xc, err := teamConfigC(xcfg)
	if err != nil {
		return nil, nil, err
	}
	yc, err := teamConfigC(ycfg)
	if err != nil {
		return nil, nil, err
	}
	defer t.splitLocks()()
	var xh, yh C.symm_team
	err = call("symm_team_split_2d", func() C.symm_status {
		return C.symm_team_split_2d(t.handle(), cpe(xrange), &xc, &yc, &xh, &yh)
	})
	return t.child(xh), t.child(yh), err
}

func (t *Team) child(h C.symm_team) *Team {
	if h == nil {
		return nil
	}
	return &Team{h: h, ctx: t.ctx, mu: new(sync.Mutex)}
}

// Destroy destroys a split team (collective over it); predefined teams give
// ErrInvalidArg. The Team is unusable afterwards; a second Destroy does
// nothing.
func (t *Team) Destroy() error {
	if t == nil || t.h == nil {
		return nil
	}
	defer t.splitLocks()()
	err := call("symm_team_destroy", func() C.symm_status { return C.symm_team_destroy(t.h) })
	if err == nil {
		t.h = nil
	}
	return err
}

// Barrier quiets, then waits for every PE of the team. Collective.
func (t *Team) Barrier() error {
	mu := t.lock()
	defer mu.Unlock()
	return call("symm_barrier", func() C.symm_status { return C.symm_barrier(t.handle()) })
}

// Sync waits for every PE of the team (no quiet). Collective.
func (t *Team) Sync() error {
	mu := t.lock()
	defer mu.Unlock()
	return call("symm_team_sync", func() C.symm_status { return C.symm_team_sync(t.handle()) })
}

// BarrierOnStream enqueues a team barrier on stream s. Collective.
func (t *Team) BarrierOnStream(s Stream) error {
	mu := t.lock()
	defer mu.Unlock()
	return call("symm_barrier_on_stream", func() C.symm_status {
		return C.symm_go_barrier_on_stream(t.handle(), C.uintptr_t(s))
	})
}

// SyncOnStream enqueues a team sync on stream s. Collective.
func (t *Team) SyncOnStream(s Stream) error {
	mu := t.lock()
	defer mu.Unlock()
	return call("symm_team_sync_on_stream", func() C.symm_status {
		return C.symm_go_team_sync_on_stream(t.handle(), C.uintptr_t(s))
	})
}

// DeviceTeam describes a team to GPU code (symm_device_team); Raw is the C
// struct's bytes.
type DeviceTeam struct {
	MyPE, NPEs    int
	Start, Stride int // world PE of team PE i: Start + i*Stride
	Slot          int // sync area index
	Raw           []byte
}

// DeviceTeam fills a DeviceTeam (CUDA backend; ErrNotSupported on the host
// backend).
func (t *Team) DeviceTeam() (DeviceTeam, error) {
	var d C.symm_device_team
	d.struct_size = C.uint32_t(C.sizeof_symm_device_team)
	if err := call("symm_device_team_get", func() C.symm_status {
		return C.symm_device_team_get(t.handle(), &d)
	}); err != nil {
		return DeviceTeam{}, err
	}
	return DeviceTeam{
		MyPE: int(d.my_pe), NPEs: int(d.n_pes), Start: int(d.start), Stride: int(d.stride),
		Slot: int(d.slot), Raw: C.GoBytes(unsafe.Pointer(&d), C.int(C.sizeof_symm_device_team)),
	}, nil
}
