package nsrig

import (
	"errors"
	"fmt"
	"net/netip"

	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/goiflib/goiflib/examples/afxdp"
	"github.com/goiflib/goiflib/examples/netstack/ifliblink"
	"github.com/goiflib/goiflib/iflib"
)

// XDPConfig configures NewXDPStack.
type XDPConfig struct {
	// Interface and NetNS name the interface the driver takes (see
	// afxdp.Config).
	Interface, NetNS string
	// Addr is the stack's address and subnet.
	Addr netip.Prefix
	// Config is iflib's configuration (TxMode and the rest).
	Config iflib.Config
	// XDPMode is native (default) or generic XDP.
	XDPMode afxdp.XDPMode
	// NRxd is the RX ring size (0: afxdp.DefaultNRxd).
	NRxd int
	// TxZone is the TX zone in UMEM frames (0: 2048).
	TxZone int
	// KeepPartialChecksums hands frames up as the kernel delivered them
	// (see afxdp.Config.KeepPartialChecksums): TCP from a Linux peer with
	// its default offloads then fails.
	KeepPartialChecksums bool
	// Link is the endpoint's options; TxZone is filled in here.
	Link ifliblink.Options
	// Logf receives the driver's notices (nil: silent).
	Logf func(string, ...any)
}

// XDPStack is a gVisor stack on the AF_XDP driver: one interface, one
// queue, its own UMEM.
type XDPStack struct {
	UMEM   *afxdp.UMEM
	Driver *afxdp.Driver
	Zone   *iflib.Zone
	EP     *ifliblink.Endpoint
	Stack  *stack.Stack
}

// NewXDPStack attaches the AF_XDP driver to cfg.Interface with an
// ifliblink endpoint as its input, initialises it, and builds a stack on
// the endpoint with the interface's MAC and MTU.
func NewXDPStack(cfg XDPConfig) (x *XDPStack, err error) {
	if cfg.TxZone == 0 {
		cfg.TxZone = 2048
	}
	nrxd := cfg.NRxd
	if nrxd == 0 {
		nrxd = afxdp.DefaultNRxd
	}
	x = &XDPStack{}
	defer func() {
		if err != nil {
			err = errors.Join(err, x.Close())
			x = nil
		}
	}()
	frames := iflib.DefaultRxZoneSize(nrxd) + cfg.TxZone + 64 // + iflib's ring shadows
	if x.UMEM, err = afxdp.NewUMEM(afxdp.UMEMConfig{Frames: frames}); err != nil {
		return x, err
	}
	if x.Zone, err = x.UMEM.NewZone("netstack-tx", cfg.TxZone); err != nil {
		return x, err
	}
	lo := cfg.Link
	lo.TxZone = x.Zone
	lo.HardwareAddr = func() []byte { return x.Driver.HardwareAddr() } // asked at Bind, after Attach
	if x.EP, err = ifliblink.New(lo); err != nil {
		return x, err
	}
	x.Driver, err = afxdp.Attach(afxdp.Config{
		Interface: cfg.Interface, NetNS: cfg.NetNS, UMEM: x.UMEM, XDPMode: cfg.XDPMode, NRxd: nrxd,
		KeepPartialChecksums: cfg.KeepPartialChecksums, Logf: cfg.Logf,
	}, iflib.Attachment{Config: cfg.Config, Input: x.EP.Input})
	if err != nil {
		return x, err
	}
	ic := x.Driver.Context()
	if err = x.EP.Bind(ic); err != nil {
		return x, err
	}
	if err = ic.Init(); err != nil {
		return x, fmt.Errorf("init %s: %w", cfg.Interface, err)
	}
	if x.Stack, err = NewStack(x.EP, cfg.Addr); err != nil {
		return x, err
	}
	return x, nil
}

// Close closes the stack, detaches the driver (iflib checks that nothing
// is held), and releases the TX zone and the UMEM.
func (x *XDPStack) Close() error {
	var errs []error
	if x.Stack != nil {
		Close(x.Stack)
		x.Stack = nil
	}
	if x.Driver != nil {
		if err := x.Driver.Context().Detach(); err != nil && !errors.Is(err, iflib.ErrDetached) {
			errs = append(errs, err)
		}
	}
	if x.Zone != nil {
		errs = append(errs, x.Zone.Close())
	}
	if x.UMEM != nil {
		errs = append(errs, x.UMEM.Close())
	}
	return errors.Join(errs...)
}
