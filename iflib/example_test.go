package iflib_test

import (
	"fmt"
	"sync"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/iflib"
)

// loopNIC is a complete, tiny iflib driver for an in-memory loopback
// device: what it transmits comes back on its receive ring. It shows the
// whole contract: IFDI (iflib.Device) for the lifecycle and if_txrx
// (iflib.TxRx) for the fast path, with packet data moved only by device-side
// DMA at the bus addresses iflib mapped.
type loopNIC struct {
	bus *busdma.Device
	ic  *iflib.Context

	mu     sync.Mutex // the "hardware" state below
	txd    []busdma.Segment
	txEOP  []bool
	txHead int // next TX descriptor the device sends
	done   int // TX descriptors completed and not yet reported
	rxAddr []busdma.BusAddr
	rxSlot []uint16
	rxLen  []int // received length per RX descriptor, 0 = not done
	rxHead int   // next RX descriptor the device fills
	rxTail int   // the driver's RDT: first descriptor not posted
	frame  []byte
}

const loopRing = 64

// IFDI: attach, rings, init/stop, interrupts, detach.

func (d *loopNIC) AttachPre(ic *iflib.Context, sc *iflib.SoftcCtx) error {
	sc.NTxQSetsMax, sc.NRxQSetsMax = 1, 1
	sc.TxdSize[0], sc.RxdSize[0] = 16, 16 // iflib derives the ring memory from these
	sc.TxNSegments = 4
	sc.TxRx = d
	d.txd, d.txEOP = make([]busdma.Segment, loopRing), make([]bool, loopRing)
	d.rxAddr, d.rxSlot, d.rxLen = make([]busdma.BusAddr, loopRing), make([]uint16, loopRing), make([]int, loopRing)
	return nil
}
func (d *loopNIC) TxQueuesAlloc([]iflib.RingMem, int, int) error { return nil }
func (d *loopNIC) RxQueuesAlloc([]iflib.RingMem, int, int) error { return nil }
func (d *loopNIC) Init(ic *iflib.Context) error {
	d.mu.Lock()
	d.rxHead, d.rxTail, d.txHead, d.done = 0, 0, 0, 0
	clear(d.rxLen)
	d.mu.Unlock()
	// The driver reports its link; until it does, Transmit fails with
	// iflib.ErrLinkDown.
	ic.LinkStateChange(iflib.LinkStateUp, 10_000_000_000)
	return nil
}
func (d *loopNIC) Stop(ic *iflib.Context)      { ic.LinkStateChange(iflib.LinkStateDown, 0) }
func (d *loopNIC) IntrEnable(*iflib.Context)   {}
func (d *loopNIC) IntrDisable(*iflib.Context)  {}
func (d *loopNIC) Detach(*iflib.Context) error { return nil }

// if_txrx, transmit side.

func (d *loopNIC) TxdEncap(pi *iflib.PktInfo) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	i := pi.PIdx
	for k, seg := range pi.Segs[:pi.NSegs] {
		d.txd[i], d.txEOP[i] = seg, k == pi.NSegs-1
		i = (i + 1) % loopRing
	}
	pi.NewPIdx = i
	return nil
}

// TxdFlush is the doorbell: the device sends every descriptor up to pidx,
// which here means reading the frame and receiving it on the RX ring.
func (d *loopNIC) TxdFlush(qid, pidx int) {
	d.mu.Lock()
	for i := d.txHead; i != pidx; i = (i + 1) % loopRing {
		b := make([]byte, d.txd[i].Len)
		_ = d.bus.Read(d.txd[i].Addr, b) // device-side DMA
		d.frame = append(d.frame, b...)
		d.done++
		if d.txEOP[i] && d.rxHead != d.rxTail {
			_ = d.bus.Write(d.rxAddr[d.rxHead], d.frame)
			d.rxLen[d.rxHead] = len(d.frame)
			d.rxHead = (d.rxHead + 1) % loopRing
		}
		if d.txEOP[i] {
			d.frame = d.frame[:0]
		}
	}
	d.txHead = pidx
	d.mu.Unlock()
	d.ic.TxIntr(qid) // interrupts: iflib schedules the queue tasks
	d.ic.RxIntr(qid)
}

func (d *loopNIC) TxdCreditsUpdate(qid int, clear bool) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := d.done
	if clear {
		d.done = 0
	}
	return n
}

// if_txrx, receive side.

func (d *loopNIC) RxdRefill(iru *iflib.RxdUpdate) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := 0; i < iru.Count; i++ {
		pos := (iru.PIdx + i) % loopRing
		d.rxAddr[pos], d.rxSlot[pos] = iru.PAddrs[i], iru.Idxs[i]
	}
}
func (d *loopNIC) RxdFlush(qid, flid, pidx int) {
	d.mu.Lock()
	d.rxTail = pidx
	d.mu.Unlock()
}
func (d *loopNIC) RxdAvailable(qid, cidx, budget int) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for i := cidx; d.rxLen[i] != 0 && n < budget; i = (i + 1) % loopRing {
		n++
	}
	return n
}
func (d *loopNIC) RxdPktGet(ri *iflib.RxdInfo) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := d.rxLen[ri.CIdx]
	d.rxLen[ri.CIdx] = 0
	ri.Frags[0] = iflib.RxdFrag{Idx: d.rxSlot[ri.CIdx], Len: uint16(n)}
	ri.NFrags, ri.Len = 1, n
	return nil
}

// Example is a complete driver's life: attach a tiny loopback NIC to
// iflib, bring it up, transmit a frame, receive it back, stop and detach.
func Example() {
	// The address space the device does DMA in, and the device on it.
	space, _ := busdma.NewSimSpace(busdma.SimConfig{Size: 16 << 20})
	bus, _ := busdma.NewDevice(space, busdma.DeviceConfig{Name: "loop0"})

	d := &loopNIC{bus: bus}
	got := make(chan string, 1)
	ic, err := iflib.Register(iflib.Attachment{
		Driver: d,
		Shared: &iflib.SharedCtx{DriverName: "loop"}, // every other field has a default
		Bus:    bus,
		Input: func(_ *iflib.Context, qid int, pkts []*iflib.Packet) { // if_input: the stack's receive
			for _, p := range pkts {
				got <- string(p.Bytes())
				p.Free() // received packets belong to the stack
			}
		},
	})
	if err != nil {
		fmt.Println("register:", err)
		return
	}
	d.ic = ic
	if err := ic.Init(); err != nil {
		fmt.Println("init:", err)
		return
	}

	// Packets come from a zone on the device's address space.
	zone, _ := iflib.NewZone(bus.Space(), "tx", iflib.MCLBytes, 64)
	p, _ := zone.Get()
	p.Append([]byte("hello, iflib"))
	if err := ic.Transmit(p); err != nil { // p is iflib's now, whatever the result
		fmt.Println("transmit:", err)
	}
	fmt.Println("received:", <-got)

	_ = ic.Stop()
	fmt.Println("running after stop:", ic.Running())
	fmt.Println("detach:", ic.Detach()) // also checks every packet came home
	fmt.Println("opackets:", ic.Counter(iflib.IfCounterOPackets), "ipackets:", ic.Counter(iflib.IfCounterIPackets))
	// Output:
	// received: hello, iflib
	// running after stop: false
	// detach: <nil>
	// opackets: 1 ipackets: 1
}
