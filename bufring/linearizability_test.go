package bufring

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/internal/race"
)

// Operations recorded in a history.
const (
	opEnqueue = iota
	opDequeue
	opEnqueueBurst
	opDequeueBurst
	opPeek
)

type fifoInput struct {
	op   int
	vals []int // enqueued values, or for a dequeue burst the dst length in vals[0]
}

type fifoOutput struct {
	n    int   // items taken (Enqueue: 1 or 0 for ErrFull)
	vals []int // dequeued values
}

// fifoModel is the sequential specification: a FIFO of the given capacity.
// An enqueue burst takes the longest prefix that fits; a dequeue takes up to
// the number asked for, as many as are present; a peek returns the head.
//
// An enqueue may also take a shorter prefix (down to none) than fits: that is
// where buf_ring is weaker than a linearizable FIFO, and FreeBSD's ring is the
// same. The full check counts reservations, not items: a slot reserved by a
// producer that has not published yet (br_prod_head ahead of br_prod_tail) and
// a slot claimed by a consumer that has not released it (br_cons_tail behind
// br_cons_head) both count as used, while a consumer meanwhile sees no item
// there. So a producer can get ErrFull while the abstract FIFO has room. Every
// other answer is checked exactly: values, order, exactly-once, empty, peek.
// The sequential tests and FuzzRing check that full is exact when nothing
// runs concurrently.
func fifoModel(capacity int) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return []int(nil) },
		Step: func(state, input, output any) (bool, any) {
			q := state.([]int)
			in, out := input.(fifoInput), output.(fifoOutput)
			switch in.op {
			case opEnqueue, opEnqueueBurst:
				fit := min(len(in.vals), capacity-len(q))
				if out.n > fit {
					return false, q
				}
				return true, append(append([]int(nil), q...), in.vals[:out.n]...)
			case opPeek:
				if len(q) == 0 {
					return out.n == 0, q
				}
				return out.n == 1 && out.vals[0] == q[0], q
			default:
				want := 1
				if in.op == opDequeueBurst {
					want = in.vals[0]
				}
				k := min(want, len(q))
				if out.n != k {
					return false, q
				}
				for i := 0; i < k; i++ {
					if out.vals[i] != q[i] {
						return false, q
					}
				}
				return true, q[k:]
			}
		},
		Equal: func(a, b any) bool {
			x, y := a.([]int), b.([]int)
			if len(x) != len(y) {
				return false
			}
			for i := range x {
				if x[i] != y[i] {
					return false
				}
			}
			return true
		},
	}
}

// TestLinearizable records short random concurrent histories on a small ring
// that starts near the uint32 wrap and checks each with porcupine against
// fifoModel: with one single-consumer goroutine (DequeueSC, DequeueBurstSC,
// Peek) and three producers, and with every goroutine enqueuing and running
// DequeueMC/DequeueBurstMC.
func TestLinearizable(t *testing.T) {
	histories := 60
	if testing.Short() || race.Enabled {
		histories = 20
	}
	for _, mc := range []bool{false, true} {
		model := fifoModel(3)
		for h := 0; h < histories; h++ {
			history := recordHistory(t, h, mc)
			switch res := porcupine.CheckOperationsTimeout(model, history, 10*time.Second); res {
			case porcupine.Ok:
			case porcupine.Illegal:
				for _, o := range history {
					t.Logf("c%d [%d,%d] %+v -> %+v", o.ClientId, o.Call, o.Return, o.Input, o.Output)
				}
				require.FailNow(t, fmt.Sprintf("multi-consumer %v: history %d is not linearizable", mc, h))
			default:
				t.Logf("multi-consumer %v: history %d: porcupine result %v", mc, h, res)
			}
		}
	}
}

// recordHistory runs 4 clients of 12 random operations each on a ring of
// capacity 3. Without mc, client 0 is the only consumer and the others only
// enqueue.
func recordHistory(t *testing.T, h int, mc bool) []porcupine.Operation {
	const clients, opsPerClient = 4, 12
	r := newRingAt[int](t, 4, math.MaxUint32-uint32(h%8))
	var clock, next atomic.Int64
	ops := make([][]porcupine.Operation, clients)
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(h), uint64(c)))
			for i := 0; i < opsPerClient; i++ {
				var in fifoInput
				var out fifoOutput
				switch {
				case mc:
					in.op = rng.IntN(4)
				case c == 0:
					in.op = []int{opDequeue, opDequeueBurst, opPeek}[rng.IntN(3)]
				default:
					in.op = []int{opEnqueue, opEnqueueBurst}[rng.IntN(2)]
				}
				switch in.op {
				case opEnqueue:
					in.vals = []int{int(next.Add(1))}
				case opEnqueueBurst:
					for k := 1 + rng.IntN(3); k > 0; k-- {
						in.vals = append(in.vals, int(next.Add(1)))
					}
				case opDequeueBurst:
					in.vals = []int{1 + rng.IntN(3)}
				}
				dst := make([]int, 3)
				call := clock.Add(1)
				switch in.op {
				case opEnqueue:
					if r.Enqueue(in.vals[0]) == nil {
						out.n = 1
					}
				case opEnqueueBurst:
					out.n = r.EnqueueBurst(in.vals)
				case opDequeue:
					var ok bool
					if mc {
						dst[0], ok = r.DequeueMC()
					} else {
						dst[0], ok = r.DequeueSC()
					}
					if ok {
						out.n = 1
					}
				case opDequeueBurst:
					if mc {
						out.n = r.DequeueBurstMC(dst[:in.vals[0]])
					} else {
						out.n = r.DequeueBurstSC(dst[:in.vals[0]])
					}
				case opPeek:
					if v, ok := r.Peek(); ok {
						dst[0], out.n = v, 1
					}
				}
				ret := clock.Add(1)
				out.vals = dst[:out.n]
				ops[c] = append(ops[c], porcupine.Operation{ClientId: c, Input: in, Call: call, Output: out, Return: ret})
			}
		}()
	}
	wg.Wait()
	var history []porcupine.Operation
	for _, o := range ops {
		history = append(history, o...)
	}
	return history
}
