package symm

// #include "symm_go.h"
import "C"

import "unsafe"

// What cgo sees of the compiled-in header, for the ABI test (abi_test.go),
// which compares it with abi/symm-abi.json. Unreferenced by the API: the
// linker drops it from programs.

// cConstants is every constant of symm.h, as cgo evaluates it. A constant the
// header gains must be added here (the ABI test says which).
func cConstants() map[string]uint64 {
	return map[string]uint64{
		"SYMM_VERSION_MAJOR":         C.SYMM_VERSION_MAJOR,
		"SYMM_VERSION_MINOR":         C.SYMM_VERSION_MINOR,
		"SYMM_VERSION_PATCH":         C.SYMM_VERSION_PATCH,
		"SYMM_VERSION":               C.SYMM_VERSION,
		"SYMM_SUCCESS":               C.SYMM_SUCCESS,
		"SYMM_ERR_INVALID_ARG":       C.SYMM_ERR_INVALID_ARG,
		"SYMM_ERR_INVALID_HANDLE":    C.SYMM_ERR_INVALID_HANDLE,
		"SYMM_ERR_OUT_OF_BOUNDS":     C.SYMM_ERR_OUT_OF_BOUNDS,
		"SYMM_ERR_OUT_OF_MEMORY":     C.SYMM_ERR_OUT_OF_MEMORY,
		"SYMM_ERR_LIBRARY_NOT_FOUND": C.SYMM_ERR_LIBRARY_NOT_FOUND,
		"SYMM_ERR_ABI_MISMATCH":      C.SYMM_ERR_ABI_MISMATCH,
		"SYMM_ERR_NOT_SUPPORTED":     C.SYMM_ERR_NOT_SUPPORTED,
		"SYMM_ERR_NO_DEVICE":         C.SYMM_ERR_NO_DEVICE,
		"SYMM_ERR_BOOTSTRAP":         C.SYMM_ERR_BOOTSTRAP,
		"SYMM_ERR_PEER_FAILED":       C.SYMM_ERR_PEER_FAILED,
		"SYMM_ERR_TIMEOUT":           C.SYMM_ERR_TIMEOUT,
		"SYMM_ERR_MISMATCH":          C.SYMM_ERR_MISMATCH,
		"SYMM_ERR_TEAM_EXHAUSTED":    C.SYMM_ERR_TEAM_EXHAUSTED,
		"SYMM_ERR_CUDA":              C.SYMM_ERR_CUDA,
		"SYMM_ERR_SYSTEM":            C.SYMM_ERR_SYSTEM,
		"SYMM_ERR_THREAD_LEVEL":      C.SYMM_ERR_THREAD_LEVEL,
		"SYMM_ERR_INTERNAL":          C.SYMM_ERR_INTERNAL,
		"SYMM_ERR_INVALID_STATE":     C.SYMM_ERR_INVALID_STATE,
		"SYMM_STATUS_COUNT":          C.SYMM_STATUS_COUNT,
		"SYMM_BACKEND_AUTO":          C.SYMM_BACKEND_AUTO,
		"SYMM_BACKEND_HOST":          C.SYMM_BACKEND_HOST,
		"SYMM_BACKEND_CUDA":          C.SYMM_BACKEND_CUDA,
		"SYMM_BOOTSTRAP_AUTO":        C.SYMM_BOOTSTRAP_AUTO,
		"SYMM_BOOTSTRAP_ENV":         C.SYMM_BOOTSTRAP_ENV,
		"SYMM_BOOTSTRAP_UID":         C.SYMM_BOOTSTRAP_UID,
		"SYMM_BOOTSTRAP_SINGLE":      C.SYMM_BOOTSTRAP_SINGLE,
		"SYMM_THREAD_SINGLE":         C.SYMM_THREAD_SINGLE,
		"SYMM_THREAD_FUNNELED":       C.SYMM_THREAD_FUNNELED,
		"SYMM_THREAD_SERIALIZED":     C.SYMM_THREAD_SERIALIZED,
		"SYMM_THREAD_MULTIPLE":       C.SYMM_THREAD_MULTIPLE,
		"SYMM_DTYPE_INT8":            C.SYMM_DTYPE_INT8,
		"SYMM_DTYPE_INT16":           C.SYMM_DTYPE_INT16,
		"SYMM_DTYPE_INT32":           C.SYMM_DTYPE_INT32,
		"SYMM_DTYPE_INT64":           C.SYMM_DTYPE_INT64,
		"SYMM_DTYPE_UINT8":           C.SYMM_DTYPE_UINT8,
		"SYMM_DTYPE_UINT16":          C.SYMM_DTYPE_UINT16,
		"SYMM_DTYPE_UINT32":          C.SYMM_DTYPE_UINT32,
		"SYMM_DTYPE_UINT64":          C.SYMM_DTYPE_UINT64,
		"SYMM_DTYPE_FLOAT16":         C.SYMM_DTYPE_FLOAT16,
		"SYMM_DTYPE_BFLOAT16":        C.SYMM_DTYPE_BFLOAT16,
		"SYMM_DTYPE_FLOAT32":         C.SYMM_DTYPE_FLOAT32,
		"SYMM_DTYPE_FLOAT64":         C.SYMM_DTYPE_FLOAT64,
		"SYMM_DTYPE_COUNT":           C.SYMM_DTYPE_COUNT,
		"SYMM_UNIQUE_ID_BYTES":       C.SYMM_UNIQUE_ID_BYTES,
		"SYMM_ASYNC_CLEAR":           C.SYMM_ASYNC_CLEAR,
		"SYMM_TEAM_WORLD":            C.SYMM_TEAM_WORLD,
		"SYMM_TEAM_SHARED":           C.SYMM_TEAM_SHARED,
		"SYMM_TEAM_NODE":             C.SYMM_TEAM_NODE,
		"SYMM_TEAM_SAME_LOCAL_PE":    C.SYMM_TEAM_SAME_LOCAL_PE,
		"SYMM_SIGNAL_SET":            C.SYMM_SIGNAL_SET,
		"SYMM_SIGNAL_ADD":            C.SYMM_SIGNAL_ADD,
		"SYMM_CMP_EQ":                C.SYMM_CMP_EQ,
		"SYMM_CMP_NE":                C.SYMM_CMP_NE,
		"SYMM_CMP_GT":                C.SYMM_CMP_GT,
		"SYMM_CMP_GE":                C.SYMM_CMP_GE,
		"SYMM_CMP_LT":                C.SYMM_CMP_LT,
		"SYMM_CMP_LE":                C.SYMM_CMP_LE,
		"SYMM_INDEX_NONE":            C.SYMM_INDEX_NONE,
		"SYMM_AMO_FETCH":             C.SYMM_AMO_FETCH,
		"SYMM_AMO_SET":               C.SYMM_AMO_SET,
		"SYMM_AMO_COMPARE_SWAP":      C.SYMM_AMO_COMPARE_SWAP,
		"SYMM_AMO_SWAP":              C.SYMM_AMO_SWAP,
		"SYMM_AMO_FETCH_INC":         C.SYMM_AMO_FETCH_INC,
		"SYMM_AMO_INC":               C.SYMM_AMO_INC,
		"SYMM_AMO_FETCH_ADD":         C.SYMM_AMO_FETCH_ADD,
		"SYMM_AMO_ADD":               C.SYMM_AMO_ADD,
		"SYMM_AMO_FETCH_AND":         C.SYMM_AMO_FETCH_AND,
		"SYMM_AMO_AND":               C.SYMM_AMO_AND,
		"SYMM_AMO_FETCH_OR":          C.SYMM_AMO_FETCH_OR,
		"SYMM_AMO_OR":                C.SYMM_AMO_OR,
		"SYMM_AMO_FETCH_XOR":         C.SYMM_AMO_FETCH_XOR,
		"SYMM_AMO_XOR":               C.SYMM_AMO_XOR,
		"SYMM_OP_SUM":                C.SYMM_OP_SUM,
		"SYMM_OP_PROD":               C.SYMM_OP_PROD,
		"SYMM_OP_MIN":                C.SYMM_OP_MIN,
		"SYMM_OP_MAX":                C.SYMM_OP_MAX,
		"SYMM_OP_AND":                C.SYMM_OP_AND,
		"SYMM_OP_OR":                 C.SYMM_OP_OR,
		"SYMM_OP_XOR":                C.SYMM_OP_XOR,
		"SYMM_DEVICE_FAST_PES":       C.SYMM_DEVICE_FAST_PES,
		"SYMM_DEVICE_ABI_VERSION":    C.SYMM_DEVICE_ABI_VERSION,
	}
}

type fieldLayout struct {
	name         string
	offset, size uintptr
}

type structLayout struct {
	name        string
	size, align uintptr
	fields      []fieldLayout
}

// cStructLayouts is every struct of symm.h as cgo lays it out.
func cStructLayouts() []structLayout {
	var unique_id C.symm_unique_id
	var init_attr C.symm_init_attr
	var ctx_info C.symm_ctx_info
	var team_config C.symm_team_config
	var device_ctx C.symm_device_ctx
	var device_team C.symm_device_team
	return []structLayout{
		{"symm_unique_id", unsafe.Sizeof(unique_id), unsafe.Alignof(unique_id), []fieldLayout{
			{"bytes", unsafe.Offsetof(unique_id.bytes), unsafe.Sizeof(unique_id.bytes)},
		}},
		{"symm_init_attr", unsafe.Sizeof(init_attr), unsafe.Alignof(init_attr), []fieldLayout{
			{"struct_size", unsafe.Offsetof(init_attr.struct_size), unsafe.Sizeof(init_attr.struct_size)},
			{"backend", unsafe.Offsetof(init_attr.backend), unsafe.Sizeof(init_attr.backend)},
			{"bootstrap", unsafe.Offsetof(init_attr.bootstrap), unsafe.Sizeof(init_attr.bootstrap)},
			{"thread_level", unsafe.Offsetof(init_attr.thread_level), unsafe.Sizeof(init_attr.thread_level)},
			{"heap_cap", unsafe.Offsetof(init_attr.heap_cap), unsafe.Sizeof(init_attr.heap_cap)},
			{"rank", unsafe.Offsetof(init_attr.rank), unsafe.Sizeof(init_attr.rank)},
			{"n_pes", unsafe.Offsetof(init_attr.n_pes), unsafe.Sizeof(init_attr.n_pes)},
			{"device", unsafe.Offsetof(init_attr.device), unsafe.Sizeof(init_attr.device)},
			{"timeout_ms", unsafe.Offsetof(init_attr.timeout_ms), unsafe.Sizeof(init_attr.timeout_ms)},
			{"unique_id", unsafe.Offsetof(init_attr.unique_id), unsafe.Sizeof(init_attr.unique_id)},
		}},
		{"symm_ctx_info", unsafe.Sizeof(ctx_info), unsafe.Alignof(ctx_info), []fieldLayout{
			{"struct_size", unsafe.Offsetof(ctx_info.struct_size), unsafe.Sizeof(ctx_info.struct_size)},
			{"backend", unsafe.Offsetof(ctx_info.backend), unsafe.Sizeof(ctx_info.backend)},
			{"thread_level", unsafe.Offsetof(ctx_info.thread_level), unsafe.Sizeof(ctx_info.thread_level)},
			{"my_pe", unsafe.Offsetof(ctx_info.my_pe), unsafe.Sizeof(ctx_info.my_pe)},
			{"n_pes", unsafe.Offsetof(ctx_info.n_pes), unsafe.Sizeof(ctx_info.n_pes)},
			{"local_pe", unsafe.Offsetof(ctx_info.local_pe), unsafe.Sizeof(ctx_info.local_pe)},
			{"local_n_pes", unsafe.Offsetof(ctx_info.local_n_pes), unsafe.Sizeof(ctx_info.local_n_pes)},
			{"device", unsafe.Offsetof(ctx_info.device), unsafe.Sizeof(ctx_info.device)},
			{"heap_cap", unsafe.Offsetof(ctx_info.heap_cap), unsafe.Sizeof(ctx_info.heap_cap)},
			{"heap_mapped", unsafe.Offsetof(ctx_info.heap_mapped), unsafe.Sizeof(ctx_info.heap_mapped)},
			{"heap_used", unsafe.Offsetof(ctx_info.heap_used), unsafe.Sizeof(ctx_info.heap_used)},
		}},
		{"symm_team_config", unsafe.Sizeof(team_config), unsafe.Alignof(team_config), []fieldLayout{
			{"struct_size", unsafe.Offsetof(team_config.struct_size), unsafe.Sizeof(team_config.struct_size)},
			{"num_contexts", unsafe.Offsetof(team_config.num_contexts), unsafe.Sizeof(team_config.num_contexts)},
		}},
		{"symm_device_ctx", unsafe.Sizeof(device_ctx), unsafe.Alignof(device_ctx), []fieldLayout{
			{"struct_size", unsafe.Offsetof(device_ctx.struct_size), unsafe.Sizeof(device_ctx.struct_size)},
			{"my_pe", unsafe.Offsetof(device_ctx.my_pe), unsafe.Sizeof(device_ctx.my_pe)},
			{"n_pes", unsafe.Offsetof(device_ctx.n_pes), unsafe.Sizeof(device_ctx.n_pes)},
			{"team_slots", unsafe.Offsetof(device_ctx.team_slots), unsafe.Sizeof(device_ctx.team_slots)},
			{"heap_cap", unsafe.Offsetof(device_ctx.heap_cap), unsafe.Sizeof(device_ctx.heap_cap)},
			{"heap_base", unsafe.Offsetof(device_ctx.heap_base), unsafe.Sizeof(device_ctx.heap_base)},
			{"slot_bytes", unsafe.Offsetof(device_ctx.slot_bytes), unsafe.Sizeof(device_ctx.slot_bytes)},
			{"peer_table", unsafe.Offsetof(device_ctx.peer_table), unsafe.Sizeof(device_ctx.peer_table)},
			{"peer_base", unsafe.Offsetof(device_ctx.peer_base), unsafe.Sizeof(device_ctx.peer_base)},
			{"fail_word", unsafe.Offsetof(device_ctx.fail_word), unsafe.Sizeof(device_ctx.fail_word)},
			{"device_abi", unsafe.Offsetof(device_ctx.device_abi), unsafe.Sizeof(device_ctx.device_abi)},
			{"n_rings", unsafe.Offsetof(device_ctx.n_rings), unsafe.Sizeof(device_ctx.n_rings)},
			{"rings", unsafe.Offsetof(device_ctx.rings), unsafe.Sizeof(device_ctx.rings)},
		}},
		{"symm_device_team", unsafe.Sizeof(device_team), unsafe.Alignof(device_team), []fieldLayout{
			{"struct_size", unsafe.Offsetof(device_team.struct_size), unsafe.Sizeof(device_team.struct_size)},
			{"my_pe", unsafe.Offsetof(device_team.my_pe), unsafe.Sizeof(device_team.my_pe)},
			{"n_pes", unsafe.Offsetof(device_team.n_pes), unsafe.Sizeof(device_team.n_pes)},
			{"start", unsafe.Offsetof(device_team.start), unsafe.Sizeof(device_team.start)},
			{"stride", unsafe.Offsetof(device_team.stride), unsafe.Sizeof(device_team.stride)},
			{"slot", unsafe.Offsetof(device_team.slot), unsafe.Sizeof(device_team.slot)},
			{"reserved", unsafe.Offsetof(device_team.reserved), unsafe.Sizeof(device_team.reserved)},
		}},
	}
}

// cTypedefs is the size and signedness of each typedef of symm.h.
func cTypedefs() map[string][2]int64 {
	var h [3]unsafe.Pointer
	return map[string][2]int64{
		"symm_status":   {int64(unsafe.Sizeof(C.symm_status(0))), boolInt(C.symm_status(-1) < 0)},
		"symm_ctx":      {int64(unsafe.Sizeof(C.symm_ctx(h[0]))), 0},
		"symm_team":     {int64(unsafe.Sizeof(C.symm_team(h[1]))), 0},
		"symm_buf":      {int64(unsafe.Sizeof(C.symm_buf(h[2]))), 0},
		"symm_stream_t": {int64(unsafe.Sizeof(C.symm_stream_t(nil))), 0},
	}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
