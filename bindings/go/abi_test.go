package symm

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The binding against abi/symm-abi.json (made by abi/gen_abi_json.py from
// include/symm/symm.h): every function is called through cgo by exported Go
// API (or listed in notWrapped with a reason), with the right number of
// arguments; functions that keep a local pointer take no Go slice; every
// constant has its value both in cgo's view of the compiled-in header and in
// the Go constant that exposes it; every status has its sentinel, name and
// description; struct layouts as cgo sees them equal the JSON's. A header
// that gains or changes an entry the binding does not reflect fails here.

// goAPI: the exported Go API through which each C function is reachable.
var goAPI = map[string][]string{
	"symm_status_string":               {"Status.Name"},
	"symm_last_error":                  {"Error.Message"},
	"symm_loader_probe":                {"Probe"},
	"symm_loader_set_runtime":          {"SetRuntimePath"},
	"symm_loader_get_version":          {"LoaderVersion"},
	"symm_loader_runtime_path":         {"RuntimePath"},
	"symm_get_version":                 {"RuntimeVersion"},
	"symm_dtype_size":                  {"DType.Size"},
	"symm_init_attr_init":              {"DefaultInitAttr", "Init"},
	"symm_get_unique_id":               {"GetUniqueID"},
	"symm_init":                        {"Init"},
	"symm_finalize":                    {"Context.Finalize"},
	"symm_my_pe":                       {"Context.MyPE"},
	"symm_n_pes":                       {"Context.NPEs"},
	"symm_ctx_query":                   {"Context.Query"},
	"symm_ctx_async_error":             {"Context.AsyncError"},
	"symm_buf_alloc":                   {"Alloc"},
	"symm_buf_free":                    {"Buffer.Free"},
	"symm_buf_ptr":                     {"Buffer.Ptr", "Buffer.LocalSlice"},
	"symm_buf_query":                   {"Buffer.Offset"},
	"symm_put":                         {"Buffer.Put"},
	"symm_get":                         {"Buffer.Get"},
	"symm_put_nbi":                     {"Buffer.PutNBI"},
	"symm_get_nbi":                     {"Buffer.GetNBI"},
	"symm_p":                           {"Buffer.P"},
	"symm_g":                           {"Buffer.G"},
	"symm_putmem":                      {"Context.PutMem"},
	"symm_getmem":                      {"Context.GetMem"},
	"symm_putmem_nbi":                  {"Context.PutMemNBI"},
	"symm_getmem_nbi":                  {"Context.GetMemNBI"},
	"symm_ptr":                         {"Context.Ptr"},
	"symm_quiet":                       {"Context.Quiet"},
	"symm_fence":                       {"Context.Fence"},
	"symm_barrier_all":                 {"Context.BarrierAll"},
	"symm_sync_all":                    {"Context.SyncAll"},
	"symm_team_config_init":            {"DefaultTeamConfig", "Team.SplitStrided", "Team.Split2D"},
	"symm_team_get":                    {"Context.Team", "Context.World", "Init"},
	"symm_team_split_strided":          {"Team.SplitStrided"},
	"symm_team_split_2d":               {"Team.Split2D"},
	"symm_team_destroy":                {"Team.Destroy"},
	"symm_team_my_pe":                  {"Team.MyPE"},
	"symm_team_n_pes":                  {"Team.NPEs"},
	"symm_team_translate_pe":           {"Team.TranslatePE"},
	"symm_team_get_config":             {"Team.Config"},
	"symm_put_signal":                  {"Buffer.PutSignal"},
	"symm_put_signal_nbi":              {"Buffer.PutSignalNBI"},
	"symm_signal_op":                   {"Buffer.SignalOp"},
	"symm_signal_fetch":                {"Buffer.SignalFetch"},
	"symm_signal_wait_until":           {"Buffer.SignalWaitUntil"},
	"symm_wait_until":                  {"Buffer.WaitUntil"},
	"symm_wait_until_all":              {"Buffer.WaitUntilAll"},
	"symm_wait_until_any":              {"Buffer.WaitUntilAny"},
	"symm_wait_until_some":             {"Buffer.WaitUntilSome"},
	"symm_wait_until_all_vector":       {"Buffer.WaitUntilAllVector"},
	"symm_wait_until_any_vector":       {"Buffer.WaitUntilAnyVector"},
	"symm_wait_until_some_vector":      {"Buffer.WaitUntilSomeVector"},
	"symm_test":                        {"Buffer.Test"},
	"symm_test_all":                    {"Buffer.TestAll"},
	"symm_test_any":                    {"Buffer.TestAny"},
	"symm_test_some":                   {"Buffer.TestSome"},
	"symm_test_all_vector":             {"Buffer.TestAllVector"},
	"symm_test_any_vector":             {"Buffer.TestAnyVector"},
	"symm_test_some_vector":            {"Buffer.TestSomeVector"},
	"symm_atomic":                      {"Buffer.Atomic", "Buffer.AtomicFetchAdd"},
	"symm_atomic_nbi":                  {"Buffer.AtomicNBI"},
	"symm_barrier":                     {"Team.Barrier"},
	"symm_team_sync":                   {"Team.Sync"},
	"symm_broadcast":                   {"Broadcast"},
	"symm_fcollect":                    {"Fcollect"},
	"symm_collect":                     {"Collect"},
	"symm_alltoall":                    {"Alltoall"},
	"symm_alltoallv":                   {"Alltoallv"},
	"symm_reduce":                      {"Reduce"},
	"symm_reducescatter":               {"Reducescatter"},
	"symm_put_on_stream":               {"Buffer.PutOnStream"},
	"symm_get_on_stream":               {"Buffer.GetOnStream"},
	"symm_put_nbi_on_stream":           {"Buffer.PutNBIOnStream"},
	"symm_get_nbi_on_stream":           {"Buffer.GetNBIOnStream"},
	"symm_p_on_stream":                 {"Buffer.POnStream"},
	"symm_putmem_on_stream":            {"Context.PutMemOnStream"},
	"symm_getmem_on_stream":            {"Context.GetMemOnStream"},
	"symm_put_signal_on_stream":        {"Buffer.PutSignalOnStream"},
	"symm_signal_op_on_stream":         {"Buffer.SignalOpOnStream"},
	"symm_signal_wait_until_on_stream": {"Buffer.SignalWaitUntilOnStream"},
	"symm_quiet_on_stream":             {"Context.QuietOnStream"},
	"symm_barrier_all_on_stream":       {"Context.BarrierAllOnStream"},
	"symm_barrier_on_stream":           {"Team.BarrierOnStream"},
	"symm_team_sync_on_stream":         {"Team.SyncOnStream"},
	"symm_broadcast_on_stream":         {"BroadcastOnStream"},
	"symm_fcollect_on_stream":          {"FcollectOnStream"},
	"symm_alltoall_on_stream":          {"AlltoallOnStream"},
	"symm_alltoallv_on_stream":         {"AlltoallvOnStream"},
	"symm_reduce_on_stream":            {"ReduceOnStream"},
	"symm_reducescatter_on_stream":     {"ReducescatterOnStream"},
	"symm_buf_peer_ptr":                {"Buffer.PeerPtr"},
	"symm_buf_register":                {"Register"},
	"symm_device_ctx_get":              {"Context.DeviceContext"},
	"symm_device_team_get":             {"Team.DeviceTeam"},
}

// notWrapped: C functions intentionally without Go API, with the reason.
// (None at ABI 1.2: every function of the header is bound.)
var notWrapped = map[string]string{}

// goConstants: the Go constant exposing each C constant.
var goConstants = map[string]int64{
	"SYMM_VERSION_MAJOR": VersionMajor, "SYMM_VERSION_MINOR": VersionMinor,
	"SYMM_VERSION_PATCH": VersionPatch, "SYMM_VERSION": VersionEncoded,
	"SYMM_SUCCESS": int64(Success), "SYMM_ERR_INVALID_ARG": int64(ErrInvalidArg),
	"SYMM_ERR_INVALID_HANDLE": int64(ErrInvalidHandle), "SYMM_ERR_OUT_OF_BOUNDS": int64(ErrOutOfBounds),
	"SYMM_ERR_OUT_OF_MEMORY": int64(ErrOutOfMemory), "SYMM_ERR_LIBRARY_NOT_FOUND": int64(ErrLibraryNotFound),
	"SYMM_ERR_ABI_MISMATCH": int64(ErrABIMismatch), "SYMM_ERR_NOT_SUPPORTED": int64(ErrNotSupported),
	"SYMM_ERR_NO_DEVICE": int64(ErrNoDevice), "SYMM_ERR_BOOTSTRAP": int64(ErrBootstrap),
	"SYMM_ERR_PEER_FAILED": int64(ErrPeerFailed), "SYMM_ERR_TIMEOUT": int64(ErrTimeout),
	"SYMM_ERR_MISMATCH": int64(ErrMismatch), "SYMM_ERR_TEAM_EXHAUSTED": int64(ErrTeamExhausted),
	"SYMM_ERR_CUDA": int64(ErrCUDA), "SYMM_ERR_SYSTEM": int64(ErrSystem),
	"SYMM_ERR_THREAD_LEVEL": int64(ErrThreadLevel), "SYMM_ERR_INTERNAL": int64(ErrInternal),
	"SYMM_ERR_INVALID_STATE": int64(ErrInvalidState),
	"SYMM_BACKEND_AUTO":      int64(BackendAuto), "SYMM_BACKEND_HOST": int64(BackendHost),
	"SYMM_BACKEND_CUDA":   int64(BackendCUDA),
	"SYMM_BOOTSTRAP_AUTO": int64(BootstrapAuto), "SYMM_BOOTSTRAP_ENV": int64(BootstrapEnv),
	"SYMM_BOOTSTRAP_UID": int64(BootstrapUID), "SYMM_BOOTSTRAP_SINGLE": int64(BootstrapSingle),
	"SYMM_THREAD_SINGLE": int64(ThreadSingle), "SYMM_THREAD_FUNNELED": int64(ThreadFunneled),
	"SYMM_THREAD_SERIALIZED": int64(ThreadSerialized), "SYMM_THREAD_MULTIPLE": int64(ThreadMultiple),
	"SYMM_DTYPE_INT8": int64(DTypeInt8), "SYMM_DTYPE_INT16": int64(DTypeInt16),
	"SYMM_DTYPE_INT32": int64(DTypeInt32), "SYMM_DTYPE_INT64": int64(DTypeInt64),
	"SYMM_DTYPE_UINT8": int64(DTypeUint8), "SYMM_DTYPE_UINT16": int64(DTypeUint16),
	"SYMM_DTYPE_UINT32": int64(DTypeUint32), "SYMM_DTYPE_UINT64": int64(DTypeUint64),
	"SYMM_DTYPE_FLOAT16": int64(DTypeFloat16), "SYMM_DTYPE_BFLOAT16": int64(DTypeBFloat16),
	"SYMM_DTYPE_FLOAT32": int64(DTypeFloat32), "SYMM_DTYPE_FLOAT64": int64(DTypeFloat64),
	"SYMM_UNIQUE_ID_BYTES": UniqueIDBytes,
	"SYMM_TEAM_WORLD":      int64(TeamWorld), "SYMM_TEAM_SHARED": int64(TeamShared),
	"SYMM_TEAM_NODE": int64(TeamNode), "SYMM_TEAM_SAME_LOCAL_PE": int64(TeamSameLocalPE),
	"SYMM_SIGNAL_SET": int64(SignalSet), "SYMM_SIGNAL_ADD": int64(SignalAdd),
	"SYMM_CMP_EQ": int64(CmpEQ), "SYMM_CMP_NE": int64(CmpNE), "SYMM_CMP_GT": int64(CmpGT),
	"SYMM_CMP_GE": int64(CmpGE), "SYMM_CMP_LT": int64(CmpLT), "SYMM_CMP_LE": int64(CmpLE),
	"SYMM_AMO_FETCH": int64(AmoFetch), "SYMM_AMO_SET": int64(AmoSet),
	"SYMM_AMO_COMPARE_SWAP": int64(AmoCompareSwap), "SYMM_AMO_SWAP": int64(AmoSwap),
	"SYMM_AMO_FETCH_INC": int64(AmoFetchInc), "SYMM_AMO_INC": int64(AmoInc),
	"SYMM_AMO_FETCH_ADD": int64(AmoFetchAdd), "SYMM_AMO_ADD": int64(AmoAdd),
	"SYMM_AMO_FETCH_AND": int64(AmoFetchAnd), "SYMM_AMO_AND": int64(AmoAnd),
	"SYMM_AMO_FETCH_OR": int64(AmoFetchOr), "SYMM_AMO_OR": int64(AmoOr),
	"SYMM_AMO_FETCH_XOR": int64(AmoFetchXor), "SYMM_AMO_XOR": int64(AmoXor),
	"SYMM_OP_SUM": int64(OpSum), "SYMM_OP_PROD": int64(OpProd), "SYMM_OP_MIN": int64(OpMin),
	"SYMM_OP_MAX": int64(OpMax), "SYMM_OP_AND": int64(OpAnd), "SYMM_OP_OR": int64(OpOr),
	"SYMM_OP_XOR":             int64(OpXor),
	"SYMM_DEVICE_FAST_PES":    DeviceFastPEs,
	"SYMM_DEVICE_ABI_VERSION": DeviceABIVersion,
}

// notExposed: C constants without a Go constant, with the reason.
var notExposed = map[string]string{
	"SYMM_STATUS_COUNT": "one Status constant per code instead; the test checks there is one per status",
	"SYMM_DTYPE_COUNT":  "the Element constraint lists the types; DTypeOf maps each",
	"SYMM_ASYNC_CLEAR":  "AsyncError takes clear bool",
	"SYMM_INDEX_NONE":   "found indices are Go ints, -1 for none",
}

// ------------------------------------------------------------ the ABI ----

type abiJSON struct {
	Version   struct{ Encoded int64 }
	Constants []struct {
		Name  string
		Value uint64
	}
	Statuses []struct {
		Name        string
		Value       int64
		Description string
	}
	Typedefs []struct{ Name, Kind string }
	Structs  []struct {
		Name        string
		Size, Align uintptr
		Fields      []struct {
			Name         string
			Offset, Size uintptr
		}
	}
	Functions []struct {
		Name   string
		Params []struct {
			Name  string
			CType string `json:"c_type"`
		}
		Keeps []struct{ Param, Until string }
	}
}

// sourceDir is the symm checkout: $SYMM_SOURCE_DIR, else the one this module
// sits in ("" when neither is there: a copied module).
func sourceDir() string {
	if d := os.Getenv("SYMM_SOURCE_DIR"); d != "" {
		return d
	}
	if _, err := os.Stat("../../abi/symm-abi.json"); err == nil {
		return "../.."
	}
	return ""
}

func loadABI(t *testing.T) *abiJSON {
	t.Helper()
	src := sourceDir()
	if src == "" {
		t.Skip("no symm checkout (set SYMM_SOURCE_DIR): abi/symm-abi.json is not available")
	}
	data, err := os.ReadFile(filepath.Join(src, "abi", "symm-abi.json"))
	if err != nil {
		t.Fatalf("reading the ABI description: %v", err)
	}
	var a abiJSON
	if err := json.Unmarshal(data, &a); err != nil {
		t.Fatalf("abi/symm-abi.json: %v", err)
	}
	return &a
}

// ---------------------------------------------------- the binding side ----

type binding struct {
	calls    map[string][]int    // C function -> argument count of each cgo call
	api      map[string][]string // exported func/method -> its parameter types
	cconsts  map[string]uint64
	gconsts  map[string]int64
	layouts  []structLayout
	typedefs map[string][2]int64
	api2c    map[string][]string
	glue     string // symm_go.h
	notWrap  map[string]string
	notExp   map[string]string
}

// scanSources parses the package's non-test Go files: every C.symm_* call
// and every exported function and method with its parameter types.
func scanSources(t *testing.T) (map[string][]int, map[string][]string) {
	t.Helper()
	fset := token.NewFileSet()
	files, _ := filepath.Glob("*.go")
	calls := map[string][]int{}
	api := map[string][]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if sel, ok := c.Fun.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == "C" && strings.HasPrefix(sel.Sel.Name, "symm_") &&
						sel.Sel.Name != "symm_go_addr" {
						// symm_go_X (symm_go.h) is X with the stream as an integer.
						fn := strings.Replace(sel.Sel.Name, "symm_go_", "symm_", 1)
						calls[fn] = append(calls[fn], len(c.Args))
					}
				}
			}
			return true
		})
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || !fd.Name.IsExported() {
				continue
			}
			name := fd.Name.Name
			if fd.Recv != nil {
				name = recvName(fd.Recv.List[0].Type) + "." + name
			}
			var params []string
			for _, p := range fd.Type.Params.List {
				ty := typeString(p.Type)
				for range p.Names {
					params = append(params, ty)
				}
			}
			api[name] = params
		}
		// Exported struct fields count as API too (Error.Message).
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, s := range gd.Specs {
				ts, ok := s.(*ast.TypeSpec)
				if !ok {
					continue
				}
				if st, ok := ts.Type.(*ast.StructType); ok {
					for _, fl := range st.Fields.List {
						for _, n := range fl.Names {
							if n.IsExported() {
								api[ts.Name.Name+"."+n.Name] = nil
							}
						}
					}
				}
			}
		}
	}
	return calls, api
}

func recvName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return recvName(x.X)
	case *ast.IndexExpr:
		return recvName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return "?"
}

// typeString spells a parameter type; every slice or array (Go memory) is "[]".
func typeString(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.ArrayType, *ast.Ellipsis:
		return "[]"
	case *ast.Ident:
		return x.Name
	case *ast.IndexExpr:
		return typeString(x.X) + "[.]"
	case *ast.SelectorExpr:
		return typeString(x.X) + "." + x.Sel.Name
	case *ast.StarExpr:
		return "*" + typeString(x.X)
	}
	return "?"
}

func loadBinding(t *testing.T) *binding {
	calls, api := scanSources(t)
	glue, err := os.ReadFile("symm_go.h")
	if err != nil {
		t.Fatal(err)
	}
	return &binding{
		glue:  string(glue),
		calls: calls, api: api, cconsts: cConstants(), gconsts: goConstants,
		layouts: cStructLayouts(), typedefs: cTypedefs(),
		api2c: goAPI, notWrap: notWrapped, notExp: notExposed,
	}
}

// compare lists every difference between the ABI and the binding.
func compare(a *abiJSON, b *binding) []string {
	var bad []string
	add := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }

	// Functions.
	known := map[string]bool{}
	for _, f := range a.Functions {
		known[f.Name] = true
		reason, skipped := b.notWrap[f.Name]
		apis, listed := b.api2c[f.Name]
		calls := b.calls[f.Name]
		switch {
		case skipped && (listed || len(calls) > 0):
			add("function %s is both bound and listed as not wrapped", f.Name)
		case skipped && strings.TrimSpace(reason) == "":
			add("function %s is listed as not wrapped without a reason", f.Name)
		case skipped:
		case len(calls) == 0:
			add("function %s is not bound (no cgo call C.%s)", f.Name, f.Name)
		case !listed || len(apis) == 0:
			add("function %s has no Go API listed in goAPI", f.Name)
		}
		for _, n := range calls {
			if n != len(f.Params) {
				add("function %s: a cgo call passes %d arguments, the ABI has %d parameters", f.Name, n, len(f.Params))
			}
		}
		if w := streamWrapper(f.Name, f.Params); w != "" && !strings.Contains(b.glue, w) {
			add("function %s takes a stream: symm_go.h must have the line\n    %s", f.Name, w)
		}
		kept := false
		for _, k := range f.Keeps {
			if k.Param != "return" && k.Until != "return" {
				kept = true
			}
		}
		for _, name := range apis {
			params, ok := b.api[name]
			if !ok {
				add("function %s: Go API %s does not exist", f.Name, name)
				continue
			}
			if kept {
				for _, p := range params {
					if p == "[]" {
						add("function %s keeps a pointer after returning, but Go API %s takes a Go slice", f.Name, name)
					}
				}
			}
		}
	}
	for _, td := range a.Typedefs {
		known[td.Name] = true // C.symm_status(x) is a conversion, not a call
	}
	for name := range b.calls {
		if !known[name] {
			add("function %s is called through cgo but not in the ABI", name)
		}
	}
	for name := range b.api2c {
		if !known[name] {
			add("function %s is listed in goAPI but not in the ABI", name)
		}
	}
	for name := range b.notWrap {
		if !known[name] {
			add("function %s is listed in notWrapped but not in the ABI", name)
		}
	}

	// Constants.
	kc := map[string]bool{}
	for _, c := range a.Constants {
		kc[c.Name] = true
		if v, ok := b.cconsts[c.Name]; !ok {
			add("constant %s = %d is not in cConstants (abi.go)", c.Name, c.Value)
		} else if v != c.Value {
			add("constant %s: cgo sees %d, the ABI has %d", c.Name, v, c.Value)
		}
		gv, exposed := b.gconsts[c.Name]
		_, skipped := b.notExp[c.Name]
		switch {
		case exposed && skipped:
			add("constant %s is both exposed and listed as not exposed", c.Name)
		case exposed && uint64(gv) != c.Value:
			add("constant %s: the Go constant is %d, the ABI has %d", c.Name, gv, c.Value)
		case !exposed && !skipped:
			add("constant %s = %d has no Go constant (goConstants) nor a reason (notExposed)", c.Name, c.Value)
		}
	}
	for name := range b.gconsts {
		if !kc[name] {
			add("constant %s is exposed but not in the ABI", name)
		}
	}
	for name := range b.cconsts {
		if !kc[name] {
			add("constant %s is in cConstants but not in the ABI", name)
		}
	}

	// Statuses: one sentinel each, with the C name and the table's description.
	if len(a.Statuses) != len(statusDescriptions) {
		add("the ABI has %d statuses, the Go binding %d", len(a.Statuses), len(statusDescriptions))
	}
	for _, s := range a.Statuses {
		st := Status(s.Value)
		if b.gconsts[s.Name] != s.Value {
			add("status %s = %d has no Go Status constant with that value", s.Name, s.Value)
		}
		if st.Name() != s.Name {
			add("status %d: symm_status_string says %q, the ABI %q", s.Value, st.Name(), s.Name)
		}
		if st.Description() != s.Description {
			add("status %s: Go description %q, the ABI %q", s.Name, st.Description(), s.Description)
		}
	}

	// Typedefs.
	for _, td := range a.Typedefs {
		got, ok := b.typedefs[td.Name]
		want := [2]int64{8, 0}
		if td.Kind == "int" {
			want = [2]int64{4, 1} // symm_status: int32_t
		}
		if !ok {
			add("typedef %s is not in cTypedefs (abi.go)", td.Name)
		} else if got != want {
			add("typedef %s: cgo sees size/signed %v, expected %v", td.Name, got, want)
		}
	}

	// Structs.
	ks := map[string]bool{}
	for _, s := range a.Structs {
		ks[s.Name] = true
		var lay *structLayout
		for i := range b.layouts {
			if b.layouts[i].name == s.Name {
				lay = &b.layouts[i]
			}
		}
		if lay == nil {
			add("struct %s is not in cStructLayouts (abi.go)", s.Name)
			continue
		}
		if lay.size != s.Size || lay.align != s.Align {
			add("struct %s: size/align %d/%d as cgo sees it, %d/%d in the ABI", s.Name, lay.size, lay.align, s.Size, s.Align)
		}
		if len(lay.fields) != len(s.Fields) {
			add("struct %s: %d fields in cStructLayouts, %d in the ABI", s.Name, len(lay.fields), len(s.Fields))
		}
		for i, f := range s.Fields {
			if i >= len(lay.fields) || lay.fields[i].name != f.Name {
				add("struct %s: field %d is not %s in cStructLayouts", s.Name, i, f.Name)
				continue
			}
			if g := lay.fields[i]; g.offset != f.Offset || g.size != f.Size {
				add("struct %s.%s: offset/size %d/%d as cgo sees it, %d/%d in the ABI", s.Name, f.Name, g.offset, g.size, f.Offset, f.Size)
			}
		}
	}
	for _, l := range b.layouts {
		if !ks[l.name] {
			add("struct %s is in cStructLayouts but not in the ABI", l.name)
		}
	}
	sort.Strings(bad)
	return bad
}

// streamWrapper is the line of symm_go.h that passes the stream of function
// name as an integer, or "" when it takes no stream.
func streamWrapper(name string, params []struct {
	Name  string
	CType string `json:"c_type"`
}) string {
	var decl, args []string
	stream := false
	for _, p := range params {
		switch {
		case p.CType == "symm_stream_t":
			stream = true
			decl = append(decl, "uintptr_t "+p.Name)
			args = append(args, "(symm_stream_t)"+p.Name)
		case strings.HasSuffix(p.CType, "*"):
			decl = append(decl, p.CType+p.Name)
			args = append(args, p.Name)
		default:
			decl = append(decl, p.CType+" "+p.Name)
			args = append(args, p.Name)
		}
	}
	if !stream {
		return ""
	}
	return fmt.Sprintf("static inline symm_status %s(%s) { return %s(%s); }",
		strings.Replace(name, "symm_", "symm_go_", 1), strings.Join(decl, ", "), name, strings.Join(args, ", "))
}

func TestBindingMatchesABIDescription(t *testing.T) {
	a := loadABI(t)
	b := loadBinding(t)
	// The check saw everything (a scanner that finds nothing must fail).
	if len(a.Functions) < 90 || len(b.calls) < 90 || len(a.Constants) < 80 || len(b.api) < 100 {
		t.Fatalf("too little parsed: %d functions, %d cgo calls, %d constants, %d API entries",
			len(a.Functions), len(b.calls), len(a.Constants), len(b.api))
	}
	if bad := compare(a, b); len(bad) > 0 {
		t.Fatalf("the Go binding differs from abi/symm-abi.json:\n  %s", strings.Join(bad, "\n  "))
	}
	if a.Version.Encoded != VersionEncoded {
		t.Fatalf("ABI version %d, Go VersionEncoded %d", a.Version.Encoded, VersionEncoded)
	}
}

// Each kind of drift is reported (so the test above can fail).
func TestABIDriftIsReported(t *testing.T) {
	a0 := loadABI(t)
	b0 := loadBinding(t)
	clone := func() (*abiJSON, *binding) {
		data, _ := json.Marshal(a0)
		var a abiJSON
		_ = json.Unmarshal(data, &a)
		b := *b0
		b.calls = map[string][]int{}
		for k, v := range b0.calls {
			b.calls[k] = v
		}
		b.api = map[string][]string{}
		for k, v := range b0.api {
			b.api[k] = v
		}
		b.cconsts = map[string]uint64{}
		for k, v := range b0.cconsts {
			b.cconsts[k] = v
		}
		b.api2c = map[string][]string{}
		for k, v := range b0.api2c {
			b.api2c[k] = v
		}
		b.layouts = append([]structLayout(nil), b0.layouts...)
		for i := range b.layouts {
			b.layouts[i].fields = append([]fieldLayout(nil), b0.layouts[i].fields...)
		}
		return &a, &b
	}
	expect := func(what string, a *abiJSON, b *binding) {
		t.Helper()
		bad := compare(a, b)
		for _, s := range bad {
			if strings.Contains(s, what) {
				return
			}
		}
		t.Errorf("drift %q not reported: %v", what, bad)
	}
	// The header gains a function.
	a, b := clone()
	a.Functions = append(a.Functions, a.Functions[len(a.Functions)-1])
	a.Functions[len(a.Functions)-1].Name = "symm_new_entry"
	expect("function symm_new_entry is not bound", a, b)
	// A function gains a parameter.
	a, b = clone()
	for i := range a.Functions {
		if a.Functions[i].Name == "symm_put" {
			a.Functions[i].Params = append(a.Functions[i].Params, a.Functions[i].Params[0])
		}
	}
	expect("function symm_put: a cgo call passes 5 arguments, the ABI has 6", a, b)
	// A function is removed from the header.
	a, b = clone()
	for i := range a.Functions {
		if a.Functions[i].Name == "symm_fence" {
			a.Functions = append(a.Functions[:i], a.Functions[i+1:]...)
			break
		}
	}
	expect("function symm_fence is called through cgo but not in the ABI", a, b)
	// The binding drops a call, or its Go API.
	a, b = clone()
	delete(b.calls, "symm_quiet")
	expect("function symm_quiet is not bound", a, b)
	a, b = clone()
	delete(b.api, "Buffer.PutNBI")
	expect("Go API Buffer.PutNBI does not exist", a, b)
	// A kept pointer taken as a Go slice.
	a, b = clone()
	b.api["Buffer.PutNBI"] = []string{"int", "[]", "int"}
	expect("function symm_put_nbi keeps a pointer after returning, but Go API Buffer.PutNBI takes a Go slice", a, b)
	// A stream entry's parameter changes type.
	a, b = clone()
	for i := range a.Functions {
		if a.Functions[i].Name == "symm_quiet_on_stream" {
			a.Functions[i].Params[0].CType = "symm_team"
		}
	}
	expect("function symm_quiet_on_stream takes a stream: symm_go.h must have the line", a, b)
	// A constant changes or is added.
	a, b = clone()
	for i := range a.Constants {
		if a.Constants[i].Name == "SYMM_CMP_LE" {
			a.Constants[i].Value = 9
		}
	}
	expect("constant SYMM_CMP_LE: cgo sees 5, the ABI has 9", a, b)
	expect("constant SYMM_CMP_LE: the Go constant is 5, the ABI has 9", a, b)
	a, b = clone()
	a.Constants = append(a.Constants, a.Constants[0])
	a.Constants[len(a.Constants)-1].Name = "SYMM_NEW_FLAG"
	expect("constant SYMM_NEW_FLAG = 1 is not in cConstants", a, b)
	expect("constant SYMM_NEW_FLAG = 1 has no Go constant", a, b)
	// A status is added.
	a, b = clone()
	a.Statuses = append(a.Statuses, a.Statuses[0])
	a.Statuses[len(a.Statuses)-1].Name, a.Statuses[len(a.Statuses)-1].Value = "SYMM_ERR_NEW", 19
	expect("the ABI has 20 statuses", a, b)
	expect("status SYMM_ERR_NEW = 19 has no Go Status constant", a, b)
	// Struct layouts.
	a, b = clone()
	a.Structs[1].Fields[2].Offset += 4
	expect("struct symm_init_attr.bootstrap: offset/size 8/4 as cgo sees it, 12/4 in the ABI", a, b)
	a, b = clone()
	a.Structs[2].Size += 8
	expect("struct symm_ctx_info: size/align 56/8 as cgo sees it, 64/8 in the ABI", a, b)
	a, b = clone()
	a.Structs[3].Fields = append(a.Structs[3].Fields, a.Structs[3].Fields[1])
	expect("struct symm_team_config: 2 fields in cStructLayouts, 3 in the ABI", a, b)
	// A typedef changes.
	a, b = clone()
	a.Typedefs[0].Kind = "handle"
	expect("typedef symm_status: cgo sees size/signed [4 1], expected [8 0]", a, b)
}
