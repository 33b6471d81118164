package nsrig

import (
	"context"
	"errors"
	"net/netip"
	"sync"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/link/channel"
	"gvisor.dev/gvisor/pkg/tcpip/link/ethernet"
	"gvisor.dev/gvisor/pkg/tcpip/link/pipe"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// Baseline is the same two stacks as a Pair joined by one of gVisor's own
// in-memory links instead of goiflib: link/pipe (the sender's goroutine
// delivers each packet to the other stack, sharing its buffers: no copy,
// no hand-off) or link/channel (a queue per direction and a goroutine
// that moves packets from one to the other, as a device would). Both are
// wrapped in link/ethernet, so the stacks resolve addresses with ARP and
// carry the same frames as over simnic.
type Baseline struct {
	A, B      *stack.Stack
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	chA, chB  *channel.Endpoint
	closeOnce sync.Once
}

// Baseline kinds.
const (
	LinkPipe    = "pipe"
	LinkChannel = "channel"
)

// ErrKind is an unknown baseline kind.
var ErrKind = errors.New("nsrig: unknown baseline link (want pipe or channel)")

// NewBaseline builds two stacks at AddrA and AddrB with IP MTU mtu over
// link/pipe or link/channel (queue of 1024 packets per direction).
func NewBaseline(kind string, mtu int) (*Baseline, error) {
	macA, macB := tcpip.LinkAddress("\x02\x00\x00\x00\x00\x01"), tcpip.LinkAddress("\x02\x00\x00\x00\x00\x02")
	b := &Baseline{}
	var epA, epB stack.LinkEndpoint
	switch kind {
	case LinkPipe:
		pa, pb := pipe.New(macA, macB, uint32(mtu+etherHdr))
		epA, epB = ethernet.New(pa), ethernet.New(pb)
	case LinkChannel:
		b.chA, b.chB = channel.New(1024, uint32(mtu+etherHdr), macA), channel.New(1024, uint32(mtu+etherHdr), macB)
		epA, epB = ethernet.New(b.chA), ethernet.New(b.chB)
		ctx, cancel := context.WithCancel(context.Background())
		b.cancel = cancel
		b.wg.Go(func() { pump(ctx, b.chA, b.chB) })
		b.wg.Go(func() { pump(ctx, b.chB, b.chA) })
	default:
		return nil, ErrKind
	}
	var err error
	if b.A, err = NewStack(epA, netip.PrefixFrom(AddrA, 24)); err != nil {
		b.Close()
		return nil, err
	}
	if b.B, err = NewStack(epB, netip.PrefixFrom(AddrB, 24)); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

const etherHdr = 14

// pump moves every packet written to from into to's stack, as
// link/channel's users do: a fresh packet over the same buffer.
func pump(ctx context.Context, from, to *channel.Endpoint) {
	for {
		pkt := from.ReadContext(ctx)
		if pkt == nil {
			return
		}
		in := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: pkt.ToBuffer()})
		to.InjectInbound(pkt.NetworkProtocolNumber, in)
		in.DecRef()
		pkt.DecRef()
	}
}

// Close closes both stacks and stops the channel pumps.
func (b *Baseline) Close() {
	b.closeOnce.Do(func() {
		for _, s := range []*stack.Stack{b.A, b.B} {
			if s != nil {
				Close(s)
			}
		}
		if b.cancel != nil {
			b.cancel()
			b.wg.Wait()
			b.chA.Close()
			b.chB.Close()
		}
	})
}
