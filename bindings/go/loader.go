package symm

// #include "symm_go.h"
import "C"

import (
	"fmt"
	"unsafe"
)

// The version of include/symm/symm.h this package was built with
// (SYMM_VERSION_MAJOR, _MINOR, _PATCH and SYMM_VERSION).
const (
	VersionMajor   = 1
	VersionMinor   = 3
	VersionPatch   = 0
	VersionEncoded = 1003000 // VersionMajor*1000000 + VersionMinor*1000 + VersionPatch
)

// Version is a symm version.
type Version struct{ Major, Minor, Patch uint32 }

// VersionFromEncoded decodes major*1000000 + minor*1000 + patch.
func VersionFromEncoded(v uint32) Version {
	return Version{v / 1000000, v / 1000 % 1000, v % 1000}
}

// Encoded is major*1000000 + minor*1000 + patch (SYMM_VERSION_ENCODE).
func (v Version) Encoded() uint32 { return v.Major*1000000 + v.Minor*1000 + v.Patch }

// String is "major.minor.patch".
func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// Probe says whether symm is usable here: it loads and negotiates with the
// runtime (once) without initialising anything. nil, or an *Error wrapping
// ErrLibraryNotFound (its message lists every path tried) or ErrABIMismatch.
func Probe() error {
	return call("symm_loader_probe", func() C.symm_status { return C.symm_loader_probe() })
}

// SetRuntimePath makes the loader open the runtime at path (a file, e.g.
// "/opt/symm/lib/libsymm_runtime.so.1") instead of searching the program's
// directory and the system path; "" restores the search. $SYMM_RUNTIME, when
// set, still wins. Valid only before the runtime was first looked for (by any
// call that needs it, or Probe): afterwards it returns ErrInvalidState and
// changes nothing.
func SetRuntimePath(path string) error {
	var cpath *C.char
	if path != "" {
		cpath = C.CString(path)
		defer C.free(unsafe.Pointer(cpath))
	}
	return call("symm_loader_set_runtime", func() C.symm_status {
		return C.symm_loader_set_runtime(cpath)
	})
}

// RuntimePath is the file the loader opened, or "" when no runtime is loaded
// (yet). It never starts a load.
func RuntimePath() string { return C.GoString(C.symm_loader_runtime_path()) }

// LoaderVersion is the version of the loader compiled into this package. It
// never loads the runtime.
func LoaderVersion() Version {
	var v C.uint32_t
	_ = call("symm_loader_get_version", func() C.symm_status { return C.symm_loader_get_version(&v) })
	return VersionFromEncoded(uint32(v))
}

// RuntimeVersion is the version of the runtime (loading it if needed).
func RuntimeVersion() (Version, error) {
	var v C.uint32_t
	err := call("symm_get_version", func() C.symm_status { return C.symm_get_version(&v) })
	return VersionFromEncoded(uint32(v)), err
}
