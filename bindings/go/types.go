package symm

// #include "symm_go.h"
import "C"

import (
	"fmt"
	"math"
)

// DType is the element type of a symmetric buffer (SYMM_DTYPE_*).
type DType uint32

// Element types, with the values of SYMM_DTYPE_*.
const (
	DTypeInt8     DType = 1
	DTypeInt16    DType = 2
	DTypeInt32    DType = 3
	DTypeInt64    DType = 4
	DTypeUint8    DType = 5
	DTypeUint16   DType = 6
	DTypeUint32   DType = 7
	DTypeUint64   DType = 8
	DTypeFloat16  DType = 9 // IEEE binary16 (Float16)
	DTypeBFloat16 DType = 10
	DTypeFloat32  DType = 11
	DTypeFloat64  DType = 12
)

var dtypeNames = [...]string{"", "int8", "int16", "int32", "int64", "uint8", "uint16",
	"uint32", "uint64", "float16", "bfloat16", "float32", "float64"}

// String is the Go name of the element type ("int32", "float16").
func (d DType) String() string {
	if d > 0 && int(d) < len(dtypeNames) {
		return dtypeNames[d]
	}
	return fmt.Sprintf("DType(%d)", uint32(d))
}

// Size is the size in bytes of one element (symm_dtype_size; answered by the
// loader, works without a runtime), 0 for an unknown DType.
func (d DType) Size() int { return int(C.symm_dtype_size(C.uint32_t(d))) }

// Element is the set of Go types a Buffer can hold: the fixed-size integers,
// float32, float64, Float16 and BFloat16 (int and uint are not included: their
// size depends on the platform; byte is uint8).
type Element interface {
	int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64 |
		Float16 | BFloat16 | float32 | float64
}

// Count is the set of element types of the count buffers of Alltoallv:
// uint64 and int64 (SYMM_DTYPE_UINT64, SYMM_DTYPE_INT64). The runtime reads
// every count as a uint64, so a negative int64 count is a huge one.
type Count interface{ uint64 | int64 }

// DTypeOf is the DType of the element type T.
func DTypeOf[T Element]() DType {
	var z T
	switch any(z).(type) {
	case int8:
		return DTypeInt8
	case int16:
		return DTypeInt16
	case int32:
		return DTypeInt32
	case int64:
		return DTypeInt64
	case uint8:
		return DTypeUint8
	case uint16:
		return DTypeUint16
	case uint32:
		return DTypeUint32
	case uint64:
		return DTypeUint64
	case Float16:
		return DTypeFloat16
	case BFloat16:
		return DTypeBFloat16
	case float32:
		return DTypeFloat32
	default: // float64: Element has no other member
		return DTypeFloat64
	}
}

// Float16 is an IEEE 754 binary16 value (SYMM_DTYPE_FLOAT16), stored as its
// bits. Convert with Float16FromFloat32 and Float32.
type Float16 uint16

// BFloat16 is a bfloat16 value (SYMM_DTYPE_BFLOAT16), stored as its bits (the
// upper half of a float32). Convert with BFloat16FromFloat32 and Float32.
type BFloat16 uint16

// Float16FromFloat32 rounds f to the nearest binary16 value (ties to even);
// overflow gives ±Inf, NaN stays NaN.
func Float16FromFloat32(f float32) Float16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return Float16(sign | 0x7e00)
		}
		return Float16(sign | 0x7c00)
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return Float16(sign | 0x7c00)
	}
	if e <= 0 { // a subnormal binary16, or zero
		if e < -10 {
			return Float16(sign)
		}
		mant |= 0x800000
		shift := uint32(14 - e)
		h := mant >> shift
		rem, half := mant&(1<<shift-1), uint32(1)<<(shift-1)
		if rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return Float16(sign | uint16(h))
	}
	h := uint32(e)<<10 | mant>>13
	if rem := mant & 0x1fff; rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // a carry into the exponent is the correct rounding (up to Inf)
	}
	return Float16(sign | uint16(h))
}

// Float32 is the exact float32 value of h.
func (h Float16) Float32() float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: normalise
		e := uint32(127 - 15 + 1)
		for mant&0x400 == 0 {
			mant <<= 1
			e--
		}
		return math.Float32frombits(sign | e<<23 | (mant&0x3ff)<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// BFloat16FromFloat32 rounds f to the nearest bfloat16 value (ties to even);
// NaN stays NaN.
func BFloat16FromFloat32(f float32) BFloat16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return BFloat16(b>>16 | 0x40)
	}
	b += 0x7fff + (b>>16)&1
	return BFloat16(b >> 16)
}

// Float32 is the exact float32 value of h.
func (h BFloat16) Float32() float32 { return math.Float32frombits(uint32(h) << 16) }

// Cmp is the comparison of the waits and tests (SYMM_CMP_*).
type Cmp uint32

// Comparisons, with the values of SYMM_CMP_*.
const (
	CmpEQ Cmp = 0 // equal
	CmpNE Cmp = 1 // not equal
	CmpGT Cmp = 2 // greater than
	CmpGE Cmp = 3 // greater or equal
	CmpLT Cmp = 4 // less than
	CmpLE Cmp = 5 // less or equal
)

// SignalOp is how a signal is updated (SYMM_SIGNAL_*).
type SignalOp uint32

// Signal updates, with the values of SYMM_SIGNAL_*.
const (
	SignalSet SignalOp = 0 // sig = value
	SignalAdd SignalOp = 1 // sig += value (mod 2^64)
)

// AmoOp is an atomic memory operation (SYMM_AMO_*) for Buffer.Atomic.
type AmoOp uint32

// Atomic operations, with the values of SYMM_AMO_*. FETCH_* ops, SWAP and
// COMPARE_SWAP return the prior value.
const (
	AmoFetch       AmoOp = 0
	AmoSet         AmoOp = 1
	AmoCompareSwap AmoOp = 2
	AmoSwap        AmoOp = 3
	AmoFetchInc    AmoOp = 4
	AmoInc         AmoOp = 5
	AmoFetchAdd    AmoOp = 6
	AmoAdd         AmoOp = 7
	AmoFetchAnd    AmoOp = 8
	AmoAnd         AmoOp = 9
	AmoFetchOr     AmoOp = 10
	AmoOr          AmoOp = 11
	AmoFetchXor    AmoOp = 12
	AmoXor         AmoOp = 13
)

// fetches says whether op returns the prior value (needs a fetched operand).
func (op AmoOp) fetches() bool {
	switch op {
	case AmoFetch, AmoCompareSwap, AmoSwap, AmoFetchInc, AmoFetchAdd, AmoFetchAnd,
		AmoFetchOr, AmoFetchXor:
		return true
	}
	return false
}

// ReduceOp is the operation of Reduce and Reducescatter (SYMM_OP_*).
type ReduceOp uint32

// Reduction operations, with the values of SYMM_OP_*. And, Or and Xor are for
// integer element types only (ErrNotSupported on floating types).
const (
	OpSum  ReduceOp = 0
	OpProd ReduceOp = 1
	OpMin  ReduceOp = 2
	OpMax  ReduceOp = 3
	OpAnd  ReduceOp = 4
	OpOr   ReduceOp = 5
	OpXor  ReduceOp = 6
)

// Backend is where a context's heap lives (SYMM_BACKEND_*).
type Backend uint32

// Backends, with the values of SYMM_BACKEND_*.
const (
	BackendAuto Backend = 0 // CUDA when a usable GPU is present, else host
	BackendHost Backend = 1 // memfd shared memory, CPU loads/stores
	BackendCUDA Backend = 2 // GPU memory through the CUDA driver API
)

// Bootstrap is how a context finds its job (SYMM_BOOTSTRAP_*).
type Bootstrap uint32

// Bootstrap modes, with the values of SYMM_BOOTSTRAP_*.
const (
	BootstrapAuto   Bootstrap = 0 // symmrun, then launcher variables, else one PE
	BootstrapEnv    Bootstrap = 1 // symmrun/torchrun/Open MPI/Slurm variables
	BootstrapUID    Bootstrap = 2 // unique id + rank + number of PEs (WithUniqueID)
	BootstrapSingle Bootstrap = 3 // one PE, no peers
)

// ThreadLevel is a context's thread level (SYMM_THREAD_*).
type ThreadLevel uint32

// Thread levels, with the values of SYMM_THREAD_*. The default is
// ThreadMultiple. ThreadFunneled is enforced per OS thread: see the package
// documentation for what that means for goroutines.
const (
	ThreadSingle     ThreadLevel = 0
	ThreadFunneled   ThreadLevel = 1
	ThreadSerialized ThreadLevel = 2
	ThreadMultiple   ThreadLevel = 3
)

// PredefinedTeam names a team every context has (SYMM_TEAM_*).
type PredefinedTeam uint32

// Predefined teams, with the values of SYMM_TEAM_*.
const (
	TeamWorld       PredefinedTeam = 0 // every PE of the context
	TeamShared      PredefinedTeam = 1 // PEs load/store reachable from this PE
	TeamNode        PredefinedTeam = 2 // PEs of this host
	TeamSameLocalPE PredefinedTeam = 3 // PEs with this local PE number, one per host
)

// Stream is a raw CUDA stream (a CUstream / cudaStream_t as an integer) for the
// OnStream forms; 0 is the legacy default stream. The host backend ignores it.
// It travels to C as an integer (special handles such as CU_STREAM_PER_THREAD,
// 2, are not valid Go pointers).
type Stream uintptr

// UniqueIDBytes is the size of a UniqueID (SYMM_UNIQUE_ID_BYTES).
const UniqueIDBytes = 128

// DeviceFastPEs is the number of PEs whose heap base a DeviceContext holds in
// the struct itself (SYMM_DEVICE_FAST_PES).
const DeviceFastPEs = 64

// DeviceABIVersion is the value a 1.3 runtime fills into DeviceContext.DeviceABI
// (SYMM_DEVICE_ABI_VERSION): GPU code built against another refuses the proxy.
const DeviceABIVersion = 2
