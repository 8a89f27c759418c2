package symm

// #include "symm_go.h"
import "C"

import "unsafe"

// Waits and tests on this PE's elements of an integer Buffer (other element
// types give ErrInvalidArg). Comparisons are signed for signed T, unsigned
// otherwise. The set forms cover elements [index, index+n); status, when not
// nil, must have n entries and excludes element i when status[i] != 0. Found
// indices are relative to index. Waits return ErrPeerFailed when a peer dies;
// so does a test whose condition is unsatisfied once the job lost a PE.

// statusArg checks an optional status slice against the set's size.
func statusArg(op string, status []int32, n int) (*C.int32_t, error) {
	if status == nil {
		return nil, nil
	}
	if len(status) != n {
		return nil, argError(op, ErrInvalidArg, "status has %d entries for %d elements", len(status), n)
	}
	if n == 0 {
		return nil, nil
	}
	return (*C.int32_t)(unsafe.Pointer(&status[0])), nil
}

// setArgs checks index, n and status of a set form.
func setArgs(op string, index, n int, status []int32) (*C.int32_t, error) {
	if err := checkIndex(op, index); err != nil {
		return nil, err
	}
	if err := checkCount(op, n); err != nil {
		return nil, err
	}
	return statusArg(op, status, n)
}

// found converts a found index (SYMM_INDEX_NONE: -1).
func found(f C.uint64_t) int {
	if uint64(f) == ^uint64(0) {
		return -1
	}
	return int(f)
}

// someIndices is the capacity for the _some forms' indices.
func someIndices(n int) ([]C.uint64_t, *C.uint64_t) {
	if n == 0 {
		return nil, nil
	}
	idx := make([]C.uint64_t, n)
	return idx, &idx[0]
}

func foundList(idx []C.uint64_t, nfound C.uint64_t) []int {
	out := make([]int, int(nfound))
	for i := range out {
		out[i] = int(idx[i])
	}
	return out
}

// WaitUntil waits until element index compares true against value.
func (b *Buffer[T]) WaitUntil(index int, cmp Cmp, value T) error {
	if err := checkIndex("symm_wait_until", index); err != nil {
		return err
	}
	return call("symm_wait_until", func() C.symm_status {
		return C.symm_wait_until(b.handle(), C.uint64_t(index), C.uint32_t(cmp), unsafe.Pointer(&value))
	})
}

// WaitUntilAll waits until every included element of [index, index+n)
// compares true against value.
func (b *Buffer[T]) WaitUntilAll(index, n int, cmp Cmp, value T, status []int32) error {
	const op = "symm_wait_until_all"
	st, err := setArgs(op, index, n, status)
	if err != nil {
		return err
	}
	return call(op, func() C.symm_status {
		return C.symm_wait_until_all(b.handle(), C.uint64_t(index), C.uint64_t(n), st, C.uint32_t(cmp),
			unsafe.Pointer(&value))
	})
}

// WaitUntilAny waits until one included element compares true and returns its
// index (relative to index), or -1 when the set is empty.
func (b *Buffer[T]) WaitUntilAny(index, n int, cmp Cmp, value T, status []int32) (int, error) {
	const op = "symm_wait_until_any"
	st, err := setArgs(op, index, n, status)
	if err != nil {
		return -1, err
	}
	var f C.uint64_t
	err = call(op, func() C.symm_status {
		return C.symm_wait_until_any(b.handle(), C.uint64_t(index), C.uint64_t(n), st, C.uint32_t(cmp),
			unsafe.Pointer(&value), &f)
	})
	if err != nil {
		return -1, err
	}
	return found(f), nil
}

// WaitUntilSome waits until at least one included element compares true and
// returns every one that does (relative indices, increasing).
func (b *Buffer[T]) WaitUntilSome(index, n int, cmp Cmp, value T, status []int32) ([]int, error) {
	const op = "symm_wait_until_some"
	st, err := setArgs(op, index, n, status)
	if err != nil {
		return nil, err
	}
	idx, ip := someIndices(n)
	var nf C.uint64_t
	err = call(op, func() C.symm_status {
		return C.symm_wait_until_some(b.handle(), C.uint64_t(index), C.uint64_t(n), st, C.uint32_t(cmp),
			unsafe.Pointer(&value), ip, &nf)
	})
	if err != nil {
		return nil, err
	}
	return foundList(idx, nf), nil
}

// WaitUntilAllVector is WaitUntilAll with element i compared against
// values[i] (n = len(values)).
func (b *Buffer[T]) WaitUntilAllVector(index int, cmp Cmp, values []T, status []int32) error {
	const op = "symm_wait_until_all_vector"
	st, err := setArgs(op, index, len(values), status)
	if err != nil {
		return err
	}
	return call(op, func() C.symm_status {
		return C.symm_wait_until_all_vector(b.handle(), C.uint64_t(index), C.uint64_t(len(values)), st,
			C.uint32_t(cmp), sptr(values))
	})
}

// WaitUntilAnyVector is WaitUntilAny with element i compared against values[i].
func (b *Buffer[T]) WaitUntilAnyVector(index int, cmp Cmp, values []T, status []int32) (int, error) {
	const op = "symm_wait_until_any_vector"
	st, err := setArgs(op, index, len(values), status)
	if err != nil {
		return -1, err
	}
	var f C.uint64_t
	err = call(op, func() C.symm_status {
		return C.symm_wait_until_any_vector(b.handle(), C.uint64_t(index), C.uint64_t(len(values)), st,
			C.uint32_t(cmp), sptr(values), &f)
	})
	if err != nil {
		return -1, err
	}
	return found(f), nil
}

// WaitUntilSomeVector is WaitUntilSome with element i compared against values[i].
func (b *Buffer[T]) WaitUntilSomeVector(index int, cmp Cmp, values []T, status []int32) ([]int, error) {
	const op = "symm_wait_until_some_vector"
	n := len(values)
	st, err := setArgs(op, index, n, status)
	if err != nil {
		return nil, err
	}
	idx, ip := someIndices(n)
	var nf C.uint64_t
	err = call(op, func() C.symm_status {
		return C.symm_wait_until_some_vector(b.handle(), C.uint64_t(index), C.uint64_t(n), st,
			C.uint32_t(cmp), sptr(values), ip, &nf)
	})
	if err != nil {
		return nil, err
	}
	return foundList(idx, nf), nil
}

// Test says whether element index compares true against value (never blocks).
func (b *Buffer[T]) Test(index int, cmp Cmp, value T) (bool, error) {
	if err := checkIndex("symm_test", index); err != nil {
		return false, err
	}
	var sat C.int32_t
	err := call("symm_test", func() C.symm_status {
		return C.symm_test(b.handle(), C.uint64_t(index), C.uint32_t(cmp), unsafe.Pointer(&value), &sat)
	})
	return sat != 0, err
}

// TestAll says whether every included element compares true.
func (b *Buffer[T]) TestAll(index, n int, cmp Cmp, value T, status []int32) (bool, error) {
	const op = "symm_test_all"
	st, err := setArgs(op, index, n, status)
	if err != nil {
		return false, err
	}
	var sat C.int32_t
	err = call(op, func() C.symm_status {
		return C.symm_test_all(b.handle(), C.uint64_t(index), C.uint64_t(n), st, C.uint32_t(cmp),
			unsafe.Pointer(&value), &sat)
	})
	return sat != 0, err
}

// TestAny returns the (relative) index of one included element that compares
// true and ok = true, or -1 and false.
func (b *Buffer[T]) TestAny(index, n int, cmp Cmp, value T, status []int32) (idx int, ok bool, err error) {
	const op = "symm_test_any"
	st, err := setArgs(op, index, n, status)
	if err != nil {
		return -1, false, err
	}
	var sat C.int32_t
	var f C.uint64_t
	err = call(op, func() C.symm_status {
		return C.symm_test_any(b.handle(), C.uint64_t(index), C.uint64_t(n), st, C.uint32_t(cmp),
			unsafe.Pointer(&value), &sat, &f)
	})
	if err != nil || sat == 0 {
		return -1, false, err
	}
	return found(f), true, nil
}

// TestSome returns every included element that compares true (possibly none).
func (b *Buffer[T]) TestSome(index, n int, cmp Cmp, value T, status []int32) ([]int, error) {
	const op = "symm_test_some"
	st, err := setArgs(op, index, n, status)
	if err != nil {
		return nil, err
	}
	idx, ip := someIndices(n)
	var nf C.uint64_t
	err = call(op, func() C.symm_status {
		return C.symm_test_some(b.handle(), C.uint64_t(index), C.uint64_t(n), st, C.uint32_t(cmp),
			unsafe.Pointer(&value), ip, &nf)
	})
	if err != nil {
		return nil, err
	}
	return foundList(idx, nf), nil
}

// TestAllVector is TestAll with element i compared against values[i].
func (b *Buffer[T]) TestAllVector(index int, cmp Cmp, values []T, status []int32) (bool, error) {
	const op = "symm_test_all_vector"
	st, err := setArgs(op, index, len(values), status)
	if err != nil {
		return false, err
	}
	var sat C.int32_t
	err = call(op, func() C.symm_status {
		return C.symm_test_all_vector(b.handle(), C.uint64_t(index), C.uint64_t(len(values)), st,
			C.uint32_t(cmp), sptr(values), &sat)
	})
	return sat != 0, err
}

// TestAnyVector is TestAny with element i compared against values[i].
func (b *Buffer[T]) TestAnyVector(index int, cmp Cmp, values []T, status []int32) (idx int, ok bool, err error) {
	const op = "symm_test_any_vector"
	st, err := setArgs(op, index, len(values), status)
	if err != nil {
		return -1, false, err
	}
	var sat C.int32_t
	var f C.uint64_t
	err = call(op, func() C.symm_status {
		return C.symm_test_any_vector(b.handle(), C.uint64_t(index), C.uint64_t(len(values)), st,
			C.uint32_t(cmp), sptr(values), &sat, &f)
	})
	if err != nil || sat == 0 {
		return -1, false, err
	}
	return found(f), true, nil
}

// TestSomeVector is TestSome with element i compared against values[i].
func (b *Buffer[T]) TestSomeVector(index int, cmp Cmp, values []T, status []int32) ([]int, error) {
	const op = "symm_test_some_vector"
	n := len(values)
	st, err := setArgs(op, index, n, status)
	if err != nil {
		return nil, err
	}
	idx, ip := someIndices(n)
	var nf C.uint64_t
	err = call(op, func() C.symm_status {
		return C.symm_test_some_vector(b.handle(), C.uint64_t(index), C.uint64_t(n), st,
			C.uint32_t(cmp), sptr(values), ip, &nf)
	})
	if err != nil {
		return nil, err
	}
	return foundList(idx, nf), nil
}
