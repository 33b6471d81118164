package mpring_test

import (
	"fmt"

	"github.com/goiflib/goiflib/mpring"
)

// A transmit queue in the shape iflib gives it: the drain callback stands in
// for iflib_txq_drain (at most 32 items per call, stall when the "hardware"
// has no descriptors), and a task calls CheckDrainage when abdicating.
func Example() {
	type packet struct{ id int }
	descriptors := 3 // free TX descriptors

	drain := func(r *mpring.Ring[*packet], cidx, pidx int) int {
		n := 0
		for i := cidx; i != pidx && n < 32 && descriptors > 0; i = r.IncrementIdx(i, 1) {
			fmt.Println("encap packet", r.At(i).id)
			descriptors--
			n++
		}
		return n // 0: no descriptors, the ring stalls
	}
	canDrain := func(*mpring.Ring[*packet]) bool { return descriptors > 0 }

	r, err := mpring.New(2048, drain, canDrain)
	if err != nil {
		panic(err)
	}
	// The sender drains inline (tx_abdicate=0). Packets 1–3 each find the
	// ring IDLE (a start each); packet 4 starts too and stalls; packet 5
	// takes over the STALLED ring and stalls again, which counts nothing.
	for id := 1; id <= 5; id++ {
		if err := r.EnqueueOne(&packet{id}, 32, false); err != nil {
			fmt.Println(err)
		}
	}
	fmt.Println(r.State())

	// Completions free descriptors; the TX task restarts the stalled ring.
	descriptors = 8
	r.CheckDrainage(32)

	// With tx_abdicate=1 the sender only enqueues; the task drains.
	_ = r.EnqueueOne(&packet{6}, 32, true)
	fmt.Println(r.State())
	r.CheckDrainage(32)
	fmt.Printf("%+v idle=%v\n", r.Stats(), r.IsIdle())
	// Output:
	// encap packet 1
	// encap packet 2
	// encap packet 3
	// pidx_head: 0005 pidx_tail: 0005 cidx: 0003 state: STALLED
	// encap packet 4
	// encap packet 5
	// pidx_head: 0006 pidx_tail: 0006 cidx: 0005 state: ABDICATED
	// encap packet 6
	// {Enqueues:6 Drops:0 Starts:4 Stalls:1 Restarts:1 Abdications:0} idle=true
}
