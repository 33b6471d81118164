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
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/icmp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"
)

// NICID is the NIC every stack of this package has.
const NICID tcpip.NICID = 1

// NewStack returns a stack with IPv4, ARP, TCP (SACK on), UDP and ICMP
// (and IPv6 and ICMPv6, without DAD or router solicitations, when an
// address is IPv6), and one NIC on ep with the addresses, each routing its
// subnet. The caller closes it with Close.
func NewStack(ep stack.LinkEndpoint, addrs ...netip.Prefix) (*stack.Stack, error) {
	opts := stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol, arp.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol, udp.NewProtocol, icmp.NewProtocol4},
	}
	for _, a := range addrs {
		if a.Addr().Is6() {
			opts.NetworkProtocols = append(opts.NetworkProtocols, ipv6.NewProtocolWithOptions(ipv6.Options{}))
			opts.TransportProtocols = append(opts.TransportProtocols, icmp.NewProtocol6)
			break
		}
	}
	s := stack.New(opts)
	sack := tcpip.TCPSACKEnabled(true)
	if err := s.SetTransportProtocolOption(tcp.ProtocolNumber, &sack); err != nil {
		s.Close()
		return nil, fmt.Errorf("nsrig: SACK: %s", err)
	}
	if err := s.CreateNIC(NICID, ep); err != nil {
		s.Close()
		return nil, fmt.Errorf("nsrig: CreateNIC: %s", err)
	}
	var routes []tcpip.Route
	for _, a := range addrs {
		pa := tcpip.ProtocolAddress{
			Protocol:          Proto(a.Addr()),
			AddressWithPrefix: tcpip.AddressWithPrefix{Address: Addr(a.Addr()), PrefixLen: a.Bits()},
		}
		if err := s.AddProtocolAddress(NICID, pa, stack.AddressProperties{}); err != nil {
			s.Close()
			return nil, fmt.Errorf("nsrig: address %v: %s", a, err)
		}
		routes = append(routes, tcpip.Route{Destination: pa.AddressWithPrefix.Subnet(), NIC: NICID})
	}
	s.SetRouteTable(routes)
	return s, nil
}

// Close closes a stack and waits for its goroutines.
func Close(s *stack.Stack) {
	s.Close()
	s.Wait()
}

// Addr converts an address for gVisor.
func Addr(a netip.Addr) tcpip.Address {
	if a.Is4() {
		return tcpip.AddrFrom4(a.As4())
	}
	return tcpip.AddrFrom16(a.As16())
}

// Proto is the network protocol of an address.
func Proto(a netip.Addr) tcpip.NetworkProtocolNumber {
	if a.Is4() {
		return ipv4.ProtocolNumber
	}
	return ipv6.ProtocolNumber
}

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
