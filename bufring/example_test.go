package bufring_test

import (
	"context"
	"errors"
	"fmt"
	"sync"

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
	d, err := bufring.NewDRBRWith(bufring.DRBRConfig[int]{
		Xmit: func(pkt *int) error {
			if descriptors == 0 {
				return bufring.ErrRefused // stays queued; the queue stalls until Restart
			}
			descriptors--
			wire = append(wire, *pkt)
			return nil
		},
		Doorbell: func() { fmt.Println("doorbell after", wire) },
	})
	if err != nil {
		panic(err)
	}
	for pkt := 1; pkt <= 5; pkt++ {
		if err := d.Transmit(pkt); err != nil {
			fmt.Println(err) // only after Close: the caller still owns pkt
		}
	}
	fmt.Println("on the wire", wire, "pending", d.Pending(), "stalled", d.Stalled())

	// The completion path frees descriptors and restarts the queue.
	descriptors = 10
	sent, more, _ := d.Restart()
	fmt.Println("restart sent", sent, "more", more, "on the wire", wire)

	// Stopping the interface: senders get their packets back.
	d.Close(nil)
	err = d.Transmit(6)
	fmt.Println("after Close:", err, errors.Is(err, bufring.ErrClosed))
	s := d.Stats()
	fmt.Printf("direct %d deferred %d drained %d returned %d refused %d doorbells %d\n",
		s.Direct, s.Deferred, s.Drained, s.Returned, s.Refused, s.Doorbells)
	// Output:
	// doorbell after [1]
	// doorbell after [1 2]
	// on the wire [1 2] pending 3 stalled true
	// doorbell after [1 2 3 4 5]
	// restart sent 3 more false on the wire [1 2 3 4 5]
	// after Close: bufring: closed true
	// direct 2 deferred 3 drained 3 returned 1 refused 1 doorbells 3
}

// A worker's inbox: producers fan in, the consumer sleeps while it is
// empty, and Close ends the consumer's loop once everything sent before it
// has been received.
func ExampleMPSC() {
	inbox, err := bufring.NewMPSC[int](64)
	if err != nil {
		panic(err)
	}
	var producers sync.WaitGroup
	for p := range 4 {
		producers.Go(func() {
			for i := range 100 {
				if err := inbox.EnqueueWait(context.Background(), p*1000+i); err != nil {
					panic(err)
				}
			}
		})
	}
	go func() { producers.Wait(); inbox.Close() }()

	sum, n := 0, 0
	buf := make([]int, 16)
	for {
		k, err := inbox.DequeueBurstWait(context.Background(), buf)
		if errors.Is(err, bufring.ErrClosed) {
			break
		}
		for _, v := range buf[:k] {
			sum += v
		}
		n += k
	}
	fmt.Println("received", n, "sum", sum)
	// Output:
	// received 400 sum 619800
}
