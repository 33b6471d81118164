package nsrig

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// Ports the servers of this package listen on.
const (
	PortEcho = 7
	PortSink = 9
	PortHTTP = 80
	PortRR   = 5001
)

// Blob returns n bytes of a PCG stream: the content every transfer of
// this package sends, so that what arrives can be compared byte for byte.
func Blob(n int, seed uint64) []byte {
	b := make([]byte, n+7)
	r := rand.NewPCG(seed, 0x9e3779b97f4a7c15)
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	return b[:n:n]
}

// Server is a set of listeners on one stack, each serving its
// connections on goroutines; Close ends them all and waits.
type Server struct {
	mu    sync.Mutex
	lns   []net.Listener
	conns map[net.Conn]struct{}
	http  *http.Server
	wg    sync.WaitGroup
}

// NewServer returns an empty server.
func NewServer() *Server { return &Server{conns: map[net.Conn]struct{}{}} }

func (sv *Server) listen(s *stack.Stack, a netip.Addr, port uint16) (net.Listener, error) {
	ln, err := gonet.ListenTCP(s, FullAddr(a, port), Proto(a))
	if err != nil {
		return nil, err
	}
	sv.mu.Lock()
	sv.lns = append(sv.lns, ln)
	sv.mu.Unlock()
	return ln, nil
}

// serve accepts on ln and runs fn on each connection, closing it after.
func (sv *Server) serve(ln net.Listener, fn func(net.Conn)) {
	sv.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			sv.mu.Lock()
			sv.conns[c] = struct{}{}
			sv.mu.Unlock()
			sv.wg.Go(func() {
				defer func() {
					c.Close()
					sv.mu.Lock()
					delete(sv.conns, c)
					sv.mu.Unlock()
				}()
				fn(c)
			})
		}
	})
}

// Echo serves TCP echo on a:PortEcho: every byte comes back, and the
// server closes after the client's FIN.
//
// It keeps reading while its writes wait (what it read queues in memory)
// instead of io.Copy's read-then-write: gVisor's TCP receiver, once its
// receive buffer is full, may refuse an in-window segment and shrink its
// window, and then discards the peer's ACKs that lie beyond it, so a
// server that stops reading while it waits to write can stall for good
// (the same class as gVisor issue 10312; seen here with io.Copy in about
// one 10 MB echo in ten on a loaded machine). Reading on keeps the
// buffer from filling.
func (sv *Server) Echo(s *stack.Stack, a netip.Addr) error {
	ln, err := sv.listen(s, a, PortEcho)
	if err != nil {
		return err
	}
	sv.serve(ln, func(c net.Conn) {
		q := make(chan []byte, 1<<14)
		done := make(chan struct{})
		go func() {
			defer close(done)
			broken := false
			for b := range q {
				if !broken {
					_, err := c.Write(b)
					broken = err != nil
				}
			}
		}()
		for {
			b := make([]byte, 32<<10)
			n, err := c.Read(b)
			if n > 0 {
				q <- b[:n]
			}
			if err != nil {
				break
			}
		}
		close(q)
		<-done
	})
	return nil
}

// Sink serves a discard service on a:PortSink that answers the byte
// count and the SHA-256 of what it read once the client half-closes.
func (sv *Server) Sink(s *stack.Stack, a netip.Addr) error {
	ln, err := sv.listen(s, a, PortSink)
	if err != nil {
		return err
	}
	sv.serve(ln, func(c net.Conn) {
		h := sha256.New()
		n, err := io.Copy(h, c)
		if err == nil {
			fmt.Fprintf(c, "%d %x\n", n, h.Sum(nil))
		}
	})
	return nil
}

// RR serves request/response on a:PortRR: each message of the client's
// size (its first 4 bytes say how long it is) comes back.
func (sv *Server) RR(s *stack.Stack, a netip.Addr) error {
	ln, err := sv.listen(s, a, PortRR)
	if err != nil {
		return err
	}
	sv.serve(ln, func(c net.Conn) {
		buf := make([]byte, 64<<10)
		for {
			if _, err := io.ReadFull(c, buf[:4]); err != nil {
				return
			}
			n := int(binary.BigEndian.Uint32(buf[:4]))
			if n < 4 || n > len(buf) {
				return
			}
			if _, err := io.ReadFull(c, buf[4:n]); err != nil {
				return
			}
			if _, err := c.Write(buf[:n]); err != nil {
				return
			}
		}
	})
	return nil
}

// HTTP serves net/http over gonet on a:PortHTTP: "/" says hello, "/blob"
// is blob (with a Content-Length), "/sha256" is the blob's SHA-256 in hex.
func (sv *Server) HTTP(s *stack.Stack, a netip.Addr, hello string, blob []byte) error {
	ln, err := sv.listen(s, a, PortHTTP)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(blob)
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, hello)
	})
	mux.HandleFunc("/blob", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		http.ServeContent(w, r, "blob", time.Time{}, bytes.NewReader(blob))
	})
	mux.HandleFunc("/sha256", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, hex.EncodeToString(sum[:]))
	})
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	sv.mu.Lock()
	sv.http = hs
	sv.mu.Unlock()
	sv.wg.Go(func() { _ = hs.Serve(ln) })
	return nil
}

// Close closes the listeners and every open connection, and waits for
// the server's goroutines.
func (sv *Server) Close() {
	sv.mu.Lock()
	for _, ln := range sv.lns {
		ln.Close()
	}
	for c := range sv.conns {
		c.Close()
	}
	hs := sv.http
	sv.mu.Unlock()
	if hs != nil {
		hs.Close()
	}
	sv.wg.Wait()
}

// Dial connects from s to a:port.
func Dial(ctx context.Context, s *stack.Stack, a netip.Addr, port uint16) (*gonet.TCPConn, error) {
	return gonet.DialContextTCP(ctx, s, FullAddr(a, port), Proto(a))
}

// ErrMismatch is a transfer whose bytes differ from what was sent.
var ErrMismatch = errors.New("nsrig: received bytes differ from the bytes sent")

// Echo sends data to a's echo server from s and reads it back, and
// checks that what came back is data, byte for byte.
func Echo(ctx context.Context, s *stack.Stack, a netip.Addr, data []byte) error {
	c, err := Dial(ctx, s, a, PortEcho)
	if err != nil {
		return fmt.Errorf("dial echo: %w", err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(data)
		if err == nil {
			err = c.CloseWrite()
		}
		werr <- err
	}()
	got := make([]byte, 0, len(data))
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			<-werr
			return fmt.Errorf("echo read after %d of %d bytes: %w", len(got), len(data), err)
		}
	}
	if err := <-werr; err != nil {
		return fmt.Errorf("echo write: %w", err)
	}
	return compare(got, data)
}

// Sink sends data to a's sink and checks the count and hash it answers.
func Sink(ctx context.Context, s *stack.Stack, a netip.Addr, data []byte) error {
	c, err := Dial(ctx, s, a, PortSink)
	if err != nil {
		return fmt.Errorf("dial sink: %w", err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	if _, err := c.Write(data); err != nil {
		return fmt.Errorf("sink write: %w", err)
	}
	if err := c.CloseWrite(); err != nil {
		return err
	}
	reply, err := io.ReadAll(c)
	if err != nil {
		return fmt.Errorf("sink reply: %w", err)
	}
	sum := sha256.Sum256(data)
	if want := fmt.Sprintf("%d %x\n", len(data), sum); string(reply) != want {
		return fmt.Errorf("%w: sink answered %q, want %q", ErrMismatch, reply, want)
	}
	return nil
}

// RRConn is a request/response client connection.
type RRConn struct {
	c   *gonet.TCPConn
	buf []byte
}

// DialRR connects to a's request/response server.
func DialRR(ctx context.Context, s *stack.Stack, a netip.Addr) (*RRConn, error) {
	c, err := Dial(ctx, s, a, PortRR)
	if err != nil {
		return nil, err
	}
	return &RRConn{c: c, buf: make([]byte, 64<<10)}, nil
}

// RoundTrip sends one message of size bytes (at least 4) and reads it
// back.
func (r *RRConn) RoundTrip(size int) error {
	size = max(size, 4)
	binary.BigEndian.PutUint32(r.buf[:4], uint32(size))
	if _, err := r.c.Write(r.buf[:size]); err != nil {
		return err
	}
	_, err := io.ReadFull(r.c, r.buf[:size])
	return err
}

// Close closes the connection.
func (r *RRConn) Close() error { return r.c.Close() }

// HTTPClient returns an HTTP client whose connections are dialled from s.
func HTTPClient(s *stack.Stack) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			ap, err := netip.ParseAddrPort(addr)
			if err != nil {
				return nil, err
			}
			return Dial(ctx, s, ap.Addr(), ap.Port())
		},
		DisableCompression: true,
	}}
}

// Get fetches http://a/path from s and returns the body; a status other
// than 200 is an error.
func Get(ctx context.Context, cl *http.Client, a netip.Addr, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+netip.AddrPortFrom(a, PortHTTP).String()+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := cl.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return body, fmt.Errorf("GET %s: after %d bytes: %w", path, len(body), err)
	}
	if resp.StatusCode != http.StatusOK {
		return body, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	if cl := resp.Header.Get("Content-Length"); cl != "" && cl != strconv.Itoa(len(body)) {
		return body, fmt.Errorf("GET %s: Content-Length %s, %d bytes", path, cl, len(body))
	}
	return body, nil
}

// GetBlob fetches /blob and checks it against want byte for byte.
func GetBlob(ctx context.Context, cl *http.Client, a netip.Addr, want []byte) error {
	got, err := Get(ctx, cl, a, "/blob")
	if err != nil {
		return err
	}
	return compare(got, want)
}

func compare(got, want []byte) error {
	if bytes.Equal(got, want) {
		return nil
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	return fmt.Errorf("%w: %d bytes received, %d sent, first difference at byte %d", ErrMismatch, len(got), len(want), i)
}
