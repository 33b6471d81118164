package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/goiflib/goiflib/examples/netstack/nsrig"
	"github.com/goiflib/goiflib/iflib"
)

// serveSimnic builds the simnic pair (the server is side B) and a host
// listener whose connections are carried to B's HTTP port through side
// A's stack: host TCP → A's stack → simnic → wire → simnic → B's stack.
func serveSimnic(o options, mode iflib.TxMode) (*server, error) {
	p, err := nsrig.NewPair(nsrig.PairConfig{MTU: o.mtu, Offload: o.offload, Config: iflib.Config{TxMode: mode}})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return nil, errors.Join(err, p.Close())
	}
	pr := &proxy{ln: ln, p: p, conns: map[io.Closer]struct{}{}}
	pr.wg.Go(pr.accept)
	url := "http://" + ln.Addr().String()
	return &server{
		stack: p.B.Stack, ep: p.B.EP, ic: p.B.Context(), addr: p.B.Addr,
		curl: []string{
			"curl " + url + "/",
			fmt.Sprintf("curl -s %s/blob | sha256sum; curl %s/sha256", url, url),
			fmt.Sprintf("(%s is carried through a second gVisor stack on a second simnic to %v:%d)", ln.Addr(), p.B.Addr, nsrig.PortHTTP),
		},
		extra: func() string {
			s := p.B.NIC.Stats()
			return fmt.Sprintf("simnic rx frames %d missed %d", s.RxFrames, s.RxMissed)
		},
		closer: func() error {
			pr.close()
			return p.Close()
		},
	}, nil
}

// proxy carries host connections to B through A's stack.
type proxy struct {
	ln    net.Listener
	p     *nsrig.Pair
	mu    sync.Mutex
	conns map[io.Closer]struct{}
	wg    sync.WaitGroup
}

func (pr *proxy) track(c io.Closer, add bool) bool {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.conns == nil {
		return false // closed
	}
	if add {
		pr.conns[c] = struct{}{}
	} else {
		delete(pr.conns, c)
	}
	return true
}

func (pr *proxy) accept() {
	for {
		hc, err := pr.ln.Accept()
		if err != nil {
			return
		}
		pr.wg.Go(func() { pr.carry(hc) })
	}
}

func (pr *proxy) carry(hc net.Conn) {
	defer hc.Close()
	if !pr.track(hc, true) {
		return
	}
	defer pr.track(hc, false)
	gc, err := nsrig.Dial(context.Background(), pr.p.A.Stack, pr.p.B.Addr, nsrig.PortHTTP)
	if err != nil {
		return
	}
	defer gc.Close()
	if !pr.track(gc, true) {
		return
	}
	defer pr.track(gc, false)
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(gc, hc)
		_ = gc.CloseWrite()
		close(done)
	}()
	_, _ = io.Copy(hc, gc)
	if tc, ok := hc.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	<-done
}

// close stops accepting, closes every carried connection and waits.
func (pr *proxy) close() {
	pr.ln.Close()
	pr.mu.Lock()
	for c := range pr.conns {
		c.Close()
	}
	pr.conns = nil
	pr.mu.Unlock()
	pr.wg.Wait()
}
