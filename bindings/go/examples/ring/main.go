// Command ring: every PE sends its number to its right neighbour, then all
// PEs sum the numbers; with a clean single-process fallback when symm is not
// available.
//
//	go build -o ring ./examples/ring
//	symmrun -n 4 ./ring                      # 4 PEs
//	SYMM_RUNTIME=/nonexistent ./ring         # no runtime: says so, exit 0
package main

import (
	"errors"
	"fmt"
	"os"

	"symm.dev/symm"
)

func run(ctx *symm.Context) (int64, error) {
	me, n := ctx.MyPE(), ctx.NPEs()
	right, left := (me+1)%n, (me+n-1)%n

	// Every PE puts its number into its right neighbour's copy.
	ring, err := symm.Alloc[int64](ctx, 1) // collective: same type and count everywhere
	if err != nil {
		return 0, err
	}
	if err := ring.Put(0, []int64{int64(me)}, right); err != nil {
		return 0, err
	}
	if err := ctx.BarrierAll(); err != nil { // the puts are complete and visible
		return 0, err
	}
	fromLeft, err := ring.G(0, me)
	if err != nil {
		return 0, err
	}
	if fromLeft != int64(left) {
		return 0, fmt.Errorf("PE %d got %d from the ring, expected %d", me, fromLeft, left)
	}

	// The sum of every PE's number, on every PE.
	total, err := symm.Alloc[int64](ctx, 1)
	if err != nil {
		return 0, err
	}
	if err := symm.Reduce(ctx.World(), total, 0, ring, 0, 1, symm.OpSum); err != nil {
		return 0, err
	}
	sum, err := total.G(0, me)
	if err != nil {
		return 0, err
	}
	if err := total.Free(); err != nil { // collective
		return 0, err
	}
	return sum, ring.Free()
}

func main() {
	ctx, err := symm.Init()
	if errors.Is(err, symm.ErrLibraryNotFound) {
		// The program still starts without symm: say so and compute what a
		// single process would have.
		fmt.Printf("symm is not available here: %v\n", err)
		fmt.Println("ring: running single-process; single-process sum = 0 (ok)")
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ring: symm init failed:", err)
		os.Exit(1)
	}
	me, n := ctx.MyPE(), ctx.NPEs()
	sum, err := run(ctx)
	if ferr := ctx.Finalize(); err == nil { // collective
		err = ferr
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "ring: PE %d: %v\n", me, err)
		os.Exit(1)
	}
	if want := int64(n * (n - 1) / 2); sum != want {
		fmt.Fprintf(os.Stderr, "ring: PE %d: sum %d, expected %d\n", me, sum, want)
		os.Exit(1)
	}
	fmt.Printf("ring: PE %d of %d: ring ok, sum %d (ok)\n", me, n, sum)
}
