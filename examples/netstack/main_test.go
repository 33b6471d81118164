package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/examples/afxdp"
	"github.com/goiflib/goiflib/examples/netstack/nsrig"
)

// syncBuf is the command's output, read while it runs.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start runs the command with args until the returned stop is called,
// and waits for it to print what to try.
func start(t *testing.T, args ...string) (out *syncBuf, stop func() error) {
	t.Helper()
	out = &syncBuf{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, out) }()
	require.Eventually(t, func() bool {
		select {
		case err := <-done:
			done <- err
			return true
		default:
		}
		return strings.Contains(out.String(), "try:\n")
	}, time.Minute, 10*time.Millisecond)
	select {
	case err := <-done:
		cancel()
		require.NoError(t, err, out.String())
		require.FailNow(t, "the command ended early:\n"+out.String())
	default:
	}
	return out, func() error {
		cancel()
		return <-done
	}
}

const blobSize = 1_000_003

// TestCommandSimnic: the default command serves HTTP from the stack on a
// simnic; the URL it prints reaches it from the host (through the second
// stack and the simulated wire), the blob arrives byte for byte, and the
// counters it prints say so.
func TestCommandSimnic(t *testing.T) {
	out, stop := start(t, "-listen", "127.0.0.1:0", "-blob", "1000003", "-interval", "50ms")
	url := regexp.MustCompile(`curl (http://127\.0\.0\.1:\d+)/\n`).FindStringSubmatch(out.String())
	require.NotNil(t, url, out.String())
	get := func(path string) []byte {
		resp, err := http.Get(url[1] + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return b
	}
	assert.Contains(t, string(get("/")), "hello from gVisor netstack on goiflib")
	blob := get("/blob")
	want := nsrig.Blob(blobSize, 1)
	assert.Equal(t, want, blob)
	sum := sha256.Sum256(want)
	assert.Equal(t, hex.EncodeToString(sum[:])+"\n", string(get("/sha256")))
	sent := regexp.MustCompile(`\| tx [1-9]\d* pkts`)
	require.Eventually(t, func() bool { return sent.MatchString(out.String()) }, 10*time.Second, 10*time.Millisecond,
		"the live counters show the download: %s", out.String())
	require.NoError(t, stop())
	assert.Regexp(t, `done: endpoint tx=\d+`, out.String())
}

// TestCommandXDP: with -link xdp the command makes a veth pair in a new
// namespace, and the curl line it prints, typed as printed, downloads the
// blob byte for byte (the peer keeps its default offloads).
func TestCommandXDP(t *testing.T) {
	if err := afxdp.RigAvailable(); err != nil {
		t.Skipf("AF_XDP needs Linux and root: %v", err)
	}
	for _, tool := range []string{"curl", "nsenter", "sha256sum", "sh"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	out, stop := start(t, "-link", "xdp", "-blob", "1000003", "-interval", "0")
	defer func() { require.NoError(t, stop()) }()
	line := regexp.MustCompile(`(?m)^    (nsenter \S+ curl -s \S+/blob \| sha256sum); `).FindStringSubmatch(out.String())
	require.NotNil(t, line, out.String())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, err := exec.CommandContext(ctx, "sh", "-c", line[1]).CombinedOutput()
	require.NoError(t, err, string(got))
	sum := sha256.Sum256(nsrig.Blob(blobSize, 1))
	assert.Equal(t, hex.EncodeToString(sum[:])+"  -\n", string(got))
}

func TestFlags(t *testing.T) {
	var out bytes.Buffer
	assert.Error(t, run(context.Background(), []string{"-link", "tap"}, &out))
	assert.Error(t, run(context.Background(), []string{"-txmode", "fast"}, &out))
	assert.Error(t, run(context.Background(), []string{"extra"}, &out))
	assert.NoError(t, run(context.Background(), []string{"-h"}, &out))
	assert.Contains(t, out.String(), "-compare")
}
