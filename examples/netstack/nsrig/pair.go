package nsrig

import (
	"errors"
	"fmt"
	"net/netip"

	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/goiflib/goiflib/busdma"

	"github.com/goiflib/goiflib/examples/netstack/ifliblink"
	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/examples/simnic/simnictest"
	"github.com/goiflib/goiflib/iflib"
)

// The pair's addresses: side A and side B of one /24 (and, with
// PairConfig.IPv6, of one /64).
var (
	AddrA  = netip.MustParseAddr("10.0.0.1")
	AddrB  = netip.MustParseAddr("10.0.0.2")
	AddrA6 = netip.MustParseAddr("fd00::1")
	AddrB6 = netip.MustParseAddr("fd00::2")
)

// PairConfig configures NewPair. The zero value works: MTU 1500, mp_ring
// mode, no offloads, no faults.
type PairConfig struct {
	// Env is the address space both NICs live on (tests pass
	// simnictest.NewEnv's, with the busdma checker on). nil: NewPair opens
	// one without the checker and Close closes it.
	Env *simnictest.Env
	// MTU is the IP MTU (0: 1500); the NICs' MaxFrame is MTU + 18.
	MTU int
	// RxBufSize is the NICs' RX cluster size (0: 2048 up to MTU 1500, else
	// 9216, so that a jumbo frame is one cluster).
	RxBufSize int
	// Config is iflib's configuration of both contexts (TxMode and the
	// rest); Unit is set per side, and RxZoneSize defaults to 2 × NRxd +
	// 256 (the stack frees every received packet at once).
	Config iflib.Config
	// Offload turns on simnic's offloads (checksum insertion, TSO, RX
	// checksum verification) and the endpoint uses them unless Link says
	// otherwise.
	Offload bool
	// Link is the endpoints' options; TxZone is filled in by NewPair.
	Link ifliblink.Options
	// TxZone is each side's TX zone in packets (0: 2048, 1024 above MTU
	// 1500; WritePackets waits for reclaim when it runs dry) and
	// TxClusterSize their size (0: 2048 up to MTU 1500, else 9216; 4096
	// with TSO).
	TxZone, TxClusterSize int
	// Faults, when set, gives each NIC a fault schedule under this
	// profile, seeded from Seed (side B from Seed+1).
	Faults *simnic.Profile
	Seed   uint64
	// RxErrors is how the simnic driver treats a frame flagged bad.
	RxErrors simnic.RxErrorStyle
	// NRxd and NTxd are the NICs' ring sizes (0: simnic's, 1024).
	NRxd, NTxd int
	// FIFO is the NICs' receive FIFO in frames (0: simnic's, 1024).
	FIFO int
	// IPv6 gives each stack an IPv6 address too (AddrA6, AddrB6).
	IPv6 bool
}

// Side is one NIC of a pair with its context, endpoint and stack.
type Side struct {
	NIC    *simnic.NIC
	Driver *simnic.Driver
	Zone   *iflib.Zone
	EP     *ifliblink.Endpoint
	Stack  *stack.Stack
	Addr   netip.Addr
	Addr6  netip.Addr // with PairConfig.IPv6
}

// Context is the side's iflib context.
func (s *Side) Context() *iflib.Context { return s.Driver.Context() }

// Pair is two stacks on two simulated NICs joined by simnic.Connect.
type Pair struct {
	A, B   *Side
	env    *simnictest.Env
	ownEnv bool
}

// defaults fills in the zero fields.
func (cfg *PairConfig) defaults() {
	if cfg.MTU == 0 {
		cfg.MTU = 1500
	}
	jumbo := cfg.MTU > 1500
	if cfg.RxBufSize == 0 {
		cfg.RxBufSize = iflib.MCLBytes
		if jumbo {
			cfg.RxBufSize = iflib.MJum9Bytes
		}
	}
	if cfg.TxZone == 0 {
		cfg.TxZone = 2048
		if jumbo {
			cfg.TxZone = 1024
		}
	}
	if cfg.Config.RxZoneSize == 0 {
		cfg.Config.RxZoneSize = 2*max(cfg.NRxd, 1024) + 256
	}
	if cfg.TxClusterSize == 0 {
		switch {
		case jumbo:
			cfg.TxClusterSize = iflib.MJum9Bytes
		case cfg.Offload && !cfg.Link.NoOffload && !cfg.Link.NoTSO:
			cfg.TxClusterSize = iflib.MJumPageSize
		default:
			cfg.TxClusterSize = iflib.MCLBytes
		}
	}
}

// NewPair builds the pair: for each side a NIC, a TX zone, an endpoint
// whose Input is the attachment's, the context bound and initialised,
// and a stack on the endpoint.
func NewPair(cfg PairConfig) (p *Pair, err error) {
	cfg.defaults()
	p = &Pair{env: cfg.Env}
	if p.env == nil {
		if p.env, err = simnictest.Open(simnictest.EnvOptions{NoChecker: true, Sim: SimConfig(cfg)}); err != nil {
			return nil, err
		}
		p.ownEnv = true
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, p.Close())
			p = nil
		}
	}()
	nics := [2]*simnic.NIC{}
	for i := range nics {
		nc := simnic.Config{
			Name: "simnic", Unit: i, MaxFrame: cfg.MTU + 18, RxBufSize: cfg.RxBufSize,
			Offload: cfg.Offload, RxErrors: cfg.RxErrors, NRxd: cfg.NRxd, NTxd: cfg.NTxd, FIFO: cfg.FIFO,
		}
		// Each side its own address (simnic's default is one for every
		// NIC): the endpoints take the driver's (Context.MAC).
		nc.MAC = simnic.DefaultMAC
		nc.MAC[5] += byte(i)
		if cfg.Faults != nil {
			nc.Schedule = simnic.NewSchedule(cfg.Seed+uint64(i), *cfg.Faults)
		}
		if nics[i], err = p.env.NewNIC(nc); err != nil {
			return p, err
		}
	}
	simnic.Connect(nics[0], nics[1])
	addrs, addrs6 := [2]netip.Addr{AddrA, AddrB}, [2]netip.Addr{AddrA6, AddrB6}
	for i, nic := range nics {
		s := &Side{NIC: nic, Addr: addrs[i]}
		prefixes := []netip.Prefix{netip.PrefixFrom(s.Addr, 24)}
		if cfg.IPv6 {
			s.Addr6 = addrs6[i]
			prefixes = append(prefixes, netip.PrefixFrom(s.Addr6, 64))
		}
		if i == 0 {
			p.A = s
		} else {
			p.B = s
		}
		if s.Zone, err = p.env.NewZone(fmt.Sprintf("netstack-tx%d", i), cfg.TxClusterSize, cfg.TxZone); err != nil {
			return p, err
		}
		lo := cfg.Link
		lo.TxZone = s.Zone
		if s.EP, err = ifliblink.New(lo); err != nil {
			return p, err
		}
		ic := cfg.Config
		ic.Unit = i
		if s.Driver, err = p.env.Attach(nic, iflib.Attachment{Config: ic, Input: s.EP.Input}); err != nil {
			return p, err
		}
		if err = s.EP.Bind(s.Context()); err != nil {
			return p, err
		}
		if cfg.IPv6 {
			// NDP's solicited-node groups: the endpoint does not join
			// multicast groups (if_addmulti), so take them all (simnic
			// filters multicast by its MTA).
			if err = s.Context().SetFlags(iflib.IffAllMulti); err != nil {
				return p, err
			}
		}
		if err = s.Context().Init(); err != nil {
			return p, err
		}
		if s.Stack, err = NewStack(s.EP, prefixes...); err != nil {
			return p, err
		}
	}
	return p, nil
}

// carved is what one cluster takes from the simulated memory: clusters
// larger than a page are carved in whole pages.
func carved(size int) int {
	if size <= 4096 {
		return size
	}
	return (size + 4095) &^ 4095
}

// SimConfig sizes a simulated memory for a pair under cfg: both NICs' RX
// free-list zones and TX zones, plus the rings.
func SimConfig(cfg PairConfig) (sc busdma.SimConfig) {
	cfg.defaults()
	rx := (cfg.Config.RxZoneSize + 64) * carved(cfg.RxBufSize)
	tx := cfg.TxZone * carved(cfg.TxClusterSize)
	sc.Size = 2*(rx+tx) + 8<<20
	return sc
}

// Env is the address space the pair lives on.
func (p *Pair) Env() *simnictest.Env { return p.env }

// Close closes both stacks, then detaches both contexts (iflib checks
// that nothing is still held), then closes the Env if the pair opened
// it. It returns every problem found.
func (p *Pair) Close() error {
	var errs []error
	for _, s := range []*Side{p.A, p.B} {
		if s != nil && s.Stack != nil {
			Close(s.Stack)
			s.Stack = nil
		}
	}
	for _, s := range []*Side{p.A, p.B} {
		if s != nil && s.Driver != nil {
			if err := s.Context().Detach(); err != nil && !errors.Is(err, iflib.ErrDetached) {
				errs = append(errs, fmt.Errorf("%s: %w", s.Context().Name(), err))
			}
		}
	}
	if p.ownEnv && p.env != nil {
		errs = append(errs, p.env.Close())
		p.env = nil
	}
	return errors.Join(errs...)
}
