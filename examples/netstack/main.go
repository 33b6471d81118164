// Command netstack serves HTTP from a gVisor TCP/IP stack on goiflib.
//
// By default the stack runs on a simulated NIC (simnic) joined by a wire to
// a second simnic with a second stack; a listener on the host
// (-listen, 127.0.0.1:8080) passes each connection through the second
// stack, so curl on this machine reaches the Go stack across the two
// simulated NICs. With -link xdp the stack runs on a veth through the
// AF_XDP driver (Linux, root): in a private network namespace made for
// the run, or on an interface given with -iface. Either way it prints the
// curl line to type and live counters until interrupted (or -dur).
//
//	go run ./examples/netstack                      # simnic pair; curl http://127.0.0.1:8080/blob
//	sudo go run ./examples/netstack -link xdp       # AF_XDP on a veth in a new namespace
//	go run ./examples/netstack -compare             # goiflib against gVisor's link/pipe and link/channel
//
// The HTTP server answers "/" with a greeting, "/blob" with -blob bytes of
// a fixed pseudo-random stream, and "/sha256" with the blob's SHA-256, so a
// download can be checked: curl -s URL/blob | sha256sum.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/goiflib/goiflib/examples/netstack/ifliblink"
	"github.com/goiflib/goiflib/examples/netstack/nsrig"
	"github.com/goiflib/goiflib/iflib"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "netstack:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	link     string
	txMode   string
	mtu      int
	offload  bool
	blob     int
	listen   string
	iface    string
	netns    string
	addr     string
	peer     string
	generic  bool
	interval time.Duration
	dur      time.Duration
	compare  bool
	rounds   int
	bytes    int
}

func parse(args []string, out io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("netstack", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.link, "link", "simnic", "the NIC under the stack: simnic (two simulated NICs and a host listener) or xdp (AF_XDP on a veth; root)")
	fs.StringVar(&o.txMode, "txmode", "mpring", "iflib transmit mode: mpring, simple or drbr")
	fs.IntVar(&o.mtu, "mtu", 1500, "IP MTU of the simnic pair (xdp: the interface's)")
	fs.BoolVar(&o.offload, "offload", false, "simnic: checksum offload and TSO on")
	fs.IntVar(&o.blob, "blob", 10<<20, "bytes served at /blob")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8080", "simnic: host address whose connections are carried to the stack")
	fs.StringVar(&o.iface, "iface", "", "xdp: drive this interface (default: make a veth pair in a new namespace)")
	fs.StringVar(&o.netns, "netns", "", "xdp with -iface: the interface's network namespace (a path)")
	fs.StringVar(&o.addr, "addr", "10.77.0.2/24", "xdp: the stack's address")
	fs.StringVar(&o.peer, "peer", "10.77.0.1/24", "xdp without -iface: the address given to the veth peer")
	fs.BoolVar(&o.generic, "generic", false, "xdp: generic (SKB) XDP instead of native")
	fs.DurationVar(&o.interval, "interval", 2*time.Second, "counter interval (0: none)")
	fs.DurationVar(&o.dur, "dur", 0, "stop after this long (0: at Ctrl-C)")
	fs.BoolVar(&o.compare, "compare", false, "measure TCP goodput and round trips over goiflib beside gVisor's link/pipe and link/channel, and print the table")
	fs.IntVar(&o.rounds, "rounds", 5, "compare: interleaved rounds")
	fs.IntVar(&o.bytes, "bytes", 50<<20, "compare: bytes per goodput measurement")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return o, nil
}

func txMode(s string) (iflib.TxMode, error) {
	for _, m := range []iflib.TxMode{iflib.TxModeMPRing, iflib.TxModeSimple, iflib.TxModeDRBR} {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("unknown -txmode %q (want mpring, simple or drbr)", s)
}

// server is what run serves from: the stack, its endpoint and context,
// the URL base and the curl lines to print, and extra counters.
type server struct {
	stack  *stack.Stack
	ep     *ifliblink.Endpoint
	ic     *iflib.Context
	addr   netip.Addr
	curl   []string
	extra  func() string
	closer func() error
}

func run(ctx context.Context, args []string, out io.Writer) error {
	o, err := parse(args, out)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if o.compare {
		return compare(ctx, o, out)
	}
	mode, err := txMode(o.txMode)
	if err != nil {
		return err
	}
	if o.dur > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.dur)
		defer cancel()
	}
	var sv *server
	switch o.link {
	case "simnic":
		sv, err = serveSimnic(o, mode)
	case "xdp":
		sv, err = serveXDP(o, mode)
	default:
		err = fmt.Errorf("unknown -link %q (want simnic or xdp)", o.link)
	}
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, sv.closer()) }()

	blob := nsrig.Blob(o.blob, 1)
	hs := nsrig.NewServer()
	defer hs.Close()
	if err := hs.HTTP(sv.stack, sv.addr, fmt.Sprintf("hello from gVisor netstack on goiflib (%s, %s)", sv.ic.Name(), mode), blob); err != nil {
		return err
	}
	fmt.Fprintf(out, "serving HTTP from the Go stack at %v on %s (iflib %s, MTU %d, MAC %s, link %v)\n",
		sv.addr, sv.ic.Name(), mode, sv.ep.MTU(), macString(sv.ep), sv.ic.LinkState())
	fmt.Fprintln(out, "try:")
	for _, l := range sv.curl {
		fmt.Fprintln(out, "   ", l)
	}
	// Link changes as the driver reports them (iflib_link_state_change),
	// printed between the counters: out is shared, so both lock it.
	lw := &lockedWriter{w: out}
	stop := sv.ic.SubscribeLink(func(ev iflib.LinkEvent) {
		fmt.Fprintf(lw, "link %v, %d Mb/s\n", ev.State, ev.Baudrate/1_000_000)
	})
	defer stop()
	counters(ctx, o.interval, sv, lw)
	return nil
}

// lockedWriter serialises writes from the counters and the link
// subscriber.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func macString(ep *ifliblink.Endpoint) string {
	a := ep.LinkAddress()
	parts := make([]string, len(a))
	for i := range len(a) {
		parts[i] = fmt.Sprintf("%02x", a[i])
	}
	return strings.Join(parts, ":")
}

// counters prints the server's counters every interval until ctx ends.
func counters(ctx context.Context, every time.Duration, sv *server, out io.Writer) {
	if every <= 0 {
		<-ctx.Done()
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	start := time.Now()
	last := sv.ep.Stats()
	lastT := start
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintf(out, "done: endpoint %v\n", sv.ep.Stats())
			return
		case now := <-t.C:
			s := sv.ep.Stats()
			dt := now.Sub(lastT).Seconds()
			tcp := sv.stack.Stats().TCP
			link := "up"
			if !sv.ep.LinkUp() {
				link = "DOWN"
			}
			line := fmt.Sprintf("[%5.0fs] link %s | rx %d pkts %.1f MB/s | tx %d pkts %.1f MB/s | dropped rx %d tx %d | iflib ierrors %d oqdrops %d | tcp retransmits %d",
				now.Sub(start).Seconds(), link,
				s.RxPackets-last.RxPackets, float64(s.RxBytes-last.RxBytes)/1e6/dt,
				s.TxPackets-last.TxPackets, float64(s.TxBytes-last.TxBytes)/1e6/dt,
				s.RxDropped(), s.TxDropped(),
				sv.ic.Counter(iflib.IfCounterIErrors), sv.ic.Counter(iflib.IfCounterOQDrops), tcp.Retransmits.Value())
			if sv.extra != nil {
				line += " | " + sv.extra()
			}
			fmt.Fprintln(out, line)
			last, lastT = s, now
		}
	}
}
