// Package nsrig builds gVisor network stacks on goiflib for the netstack
// example's command, tests and benchmarks: a stack on an ifliblink
// endpoint, two stacks on two simulated NICs joined by a wire, the same two
// stacks on gVisor's own link/pipe and link/channel (the baselines), and
// the traffic they exchange (TCP echo, sink, request/response, and HTTP
// over gonet), checked byte for byte.
package nsrig

import (
	"fmt"
	"net/netip"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/network/arp"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/icmp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"
)

// NICID is the NIC every stack of this package has.
const NICID tcpip.NICID = 1

// NewStack returns a stack with IPv4, ARP, TCP (SACK on), UDP and ICMP,
// and one NIC on ep with address addr, routing its subnet. The caller
// closes it with Close.
func NewStack(ep stack.LinkEndpoint, addr netip.Prefix) (*stack.Stack, error) {
	s := stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol, arp.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol, udp.NewProtocol, icmp.NewProtocol4},
	})
	sack := tcpip.TCPSACKEnabled(true)
	if err := s.SetTransportProtocolOption(tcp.ProtocolNumber, &sack); err != nil {
		s.Close()
		return nil, fmt.Errorf("nsrig: SACK: %s", err)
	}
	if err := s.CreateNIC(NICID, ep); err != nil {
		s.Close()
		return nil, fmt.Errorf("nsrig: CreateNIC: %s", err)
	}
	pa := tcpip.ProtocolAddress{
		Protocol: ipv4.ProtocolNumber,
		AddressWithPrefix: tcpip.AddressWithPrefix{
			Address:   tcpip.AddrFrom4(addr.Addr().As4()),
			PrefixLen: addr.Bits(),
		},
	}
	if err := s.AddProtocolAddress(NICID, pa, stack.AddressProperties{}); err != nil {
		s.Close()
		return nil, fmt.Errorf("nsrig: address %v: %s", addr, err)
	}
	s.SetRouteTable([]tcpip.Route{{Destination: pa.AddressWithPrefix.Subnet(), NIC: NICID}})
	return s, nil
}

// Close closes a stack and waits for its goroutines.
func Close(s *stack.Stack) {
	s.Close()
	s.Wait()
}

// Addr converts an IPv4 address for gVisor.
func Addr(a netip.Addr) tcpip.Address { return tcpip.AddrFrom4(a.As4()) }

// FullAddr is addr:port on the stack's NIC.
func FullAddr(a netip.Addr, port uint16) tcpip.FullAddress {
	return tcpip.FullAddress{NIC: NICID, Addr: Addr(a), Port: port}
}

// UnknownL3 sums the frames the stack's NICs received with an EtherType
// it has no protocol for (gVisor counts them per EtherType).
func UnknownL3(s *stack.Stack) uint64 {
	m := s.Stats().NICs.UnknownL3ProtocolRcvdPacketCounts
	var n uint64
	for _, k := range m.Keys() {
		if c, ok := m.Get(k); ok {
			n += c.Value()
		}
	}
	return n
}

// UnknownL3Side is UnknownL3 of a pair side's stack.
func UnknownL3Side(s *Side) uint64 { return UnknownL3(s.Stack) }
