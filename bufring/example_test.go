package bufring_test

import (
	"errors"
	"fmt"

	"github.com/goiflib/goiflib/bufring"
)

func ExampleRing() {
	r, err := bufring.New[string](4) // 4 slots hold 3 items
	if err != nil {
		panic(err)
	}
	for _, s := range []string{"a", "b", "c", "d"} {
		if err := r.Enqueue(s); errors.Is(err, bufring.ErrFull) {
			fmt.Println("full, dropped", s)
		}
	}
	head, _ := r.Peek()
	fmt.Println("head", head, "count", r.Count(), "drops", r.Drops())
	for {
		s, ok := r.DequeueSC()
		if !ok {
			break
		}
		fmt.Print(s, " ")
	}
	fmt.Println()
	// Output:
	// full, dropped d
	// head a count 3 drops 1
	// a b c
}

func ExampleDRBR() {
	descriptors := 2 // the NIC has room for two packets
	var wire []int
	xmit := func(pkt int) bool {
		if descriptors == 0 {
			return false // stays queued; goes out on a later Drain
		}
		descriptors--
		wire = append(wire, pkt)
		return true
	}
	d, err := bufring.NewDRBR(16, bufring.DefaultMaxProducers, xmit)
	if err != nil {
		panic(err)
	}
	for pkt := 1; pkt <= 5; pkt++ {
		_ = d.Transmit(pkt)
	}
	fmt.Println("on the wire", wire, "pending", d.Pending())

	// The completion path frees descriptors and drains the deferred packets.
	descriptors = 10
	more, _ := d.Drain(bufring.DefaultDrainQuota)
	s := d.Stats()
	fmt.Println("on the wire", wire, "more", more)
	fmt.Printf("direct %d deferred %d drained %d refused %d\n", s.Direct, s.Deferred, s.Drained, s.Refused)
	// Output:
	// on the wire [1 2] pending 3
	// on the wire [1 2 3 4 5] more false
	// direct 2 deferred 3 drained 3 refused 3
}
