package symm_test

import (
	"errors"
	"fmt"
	"log"

	"symm.dev/symm"
)

// A program that runs on every PE of a job (symmrun -n 4 ./prog) and falls
// back to a single process where symm is not installed.
func Example() {
	ctx, err := symm.Init()
	if errors.Is(err, symm.ErrLibraryNotFound) {
		fmt.Println("running single-process:", err)
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Finalize() // collective
	me, n := ctx.MyPE(), ctx.NPEs()
	buf, err := symm.Alloc[int64](ctx, 1) // collective
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Free() // collective (runs before Finalize)
	if err := buf.Put(0, []int64{int64(me)}, (me+1)%n); err != nil {
		log.Fatal(err)
	}
	if err := ctx.BarrierAll(); err != nil {
		log.Fatal(err)
	}
	v, _ := buf.G(0, me)
	fmt.Printf("PE %d got %d from its left neighbour\n", me, v)
}

// Non-blocking puts read their source after returning, so it lives in C
// memory (a HostMem), freed only after the quiet that completes them.
func ExampleAllocHost() {
	ctx, err := symm.Init()
	if err != nil {
		log.Fatal(err)
	}
	dst, _ := symm.Alloc[float32](ctx, 256)
	src, err := symm.AllocHost[float32](256)
	if err != nil {
		log.Fatal(err)
	}
	for i := range src.Slice() {
		src.Slice()[i] = float32(i)
	}
	peer := (ctx.MyPE() + 1) % ctx.NPEs()
	_ = dst.PutNBI(0, src.Span(0, 128), peer)
	_ = dst.PutNBI(128, src.Span(128, 256), peer)
	_ = ctx.Quiet() // both puts complete: src may be reused or freed
	src.Free()
	_ = dst.Free()
	_ = ctx.Finalize()
}

// errors.Is tests the status; errors.As gives the code, name and message.
func ExampleError() {
	ctx, err := symm.Init()
	if err != nil {
		log.Fatal(err)
	}
	buf, _ := symm.Alloc[int32](ctx, 4)
	err = buf.Put(3, []int32{1, 2}, ctx.MyPE()) // one element past the end
	var e *symm.Error
	if errors.Is(err, symm.ErrOutOfBounds) && errors.As(err, &e) {
		fmt.Println(e.Code(), e.Name(), e.Message)
	}
	_ = buf.Free()
	_ = ctx.Finalize()
}
