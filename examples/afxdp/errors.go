package afxdp

import (
	"errors"
	"fmt"

	"github.com/goiflib/goiflib/iflib"
)

// ConfigError is a refused field of Config, UMEMConfig or ForwardOptions:
// iflib.ConfigError, goiflib's one invalid-argument type, with Pkg
// "afxdp": which field (Go-named), its value and why. errors.Is matches
// ErrConfig (iflib.ErrInvalid) and Err: the sentinel of its kind
// (ErrNoInterface, ErrQueueID, ErrUnboundQueues, ErrFrameSize) or the
// cause from below (a namespace path that does not open).
type ConfigError = iflib.ConfigError

// cfgErr is a *ConfigError of kind err (ErrConfig: no kind beyond it).
func cfgErr(err error, field string, v any, format string, args ...any) error {
	if err == ErrConfig {
		err = nil
	}
	return &ConfigError{Pkg: "afxdp", Field: field, Value: v, Reason: fmt.Sprintf(format, args...), Err: err}
}

// Sentinel errors. Cold paths wrap them with detail (test with errors.Is);
// the data path returns none of them.
var (
	// ErrUnavailable: AF_XDP cannot run here (not Linux, no AF_XDP in the
	// kernel, no CAP_NET_ADMIN/CAP_BPF, no bpf(2)). The wrapped error says
	// which, with the errno.
	ErrUnavailable = errors.New("afxdp: AF_XDP unavailable")
	// ErrNoInterface: the configured interface does not exist (in the
	// configured network namespace).
	ErrNoInterface = errors.New("afxdp: no such interface")
	// ErrQueueID: a queue id is negative, repeated, or not below the
	// interface's number of RX (or TX) queues.
	ErrQueueID = errors.New("afxdp: queue id out of range")
	// ErrUnboundQueues: Config.QueueIDs leaves RX queues of the interface
	// without a socket, whose frames would silently bypass the driver (see
	// Config.QueueIDs). The message names the interface, its queue count
	// and the queues left.
	ErrUnboundQueues = errors.New("afxdp: RX queues left unbound")
	// ErrFrameSize: the UMEM frame size (chunk_size of XDP_UMEM_REG) is not
	// a power of two between XDP_UMEM_MIN_CHUNK_SIZE (2048) and the page
	// size, as aligned-chunk mode requires.
	ErrFrameSize = errors.New("afxdp: UMEM frame size must be a power of two in [2048, page size]")
	// ErrUMEMTooSmall: the UMEM has too few frames for what was asked of it
	// (the RX free lists' zones, a TX zone, the descriptor-ring shadows).
	ErrUMEMTooSmall = errors.New("afxdp: UMEM too small")
	// ErrFrameTooBig: the interface's MTU does not fit in one UMEM frame
	// after XDP_PACKET_HEADROOM, and this driver does not take multi-buffer
	// (XDP_PKT_CONTD) receives.
	ErrFrameTooBig = errors.New("afxdp: frame larger than one UMEM frame")
	// ErrZeroCopy: XDP_ZEROCOPY was required but the driver of the
	// interface has no zero-copy support (EOPNOTSUPP from bind).
	ErrZeroCopy = errors.New("afxdp: zero-copy not supported by the interface's driver")
	// ErrConfig: an invalid Config field (ring sizes, modes): iflib.ErrInvalid
	// (the same value), matched by every *ConfigError.
	ErrConfig = iflib.ErrInvalid
	// ErrClosed: the UMEM was closed (Attach on it, a second Close).
	ErrClosed = errors.New("afxdp: UMEM closed")
	// ErrBusy: the UMEM still backs an attached driver.
	ErrBusy = errors.New("afxdp: UMEM in use")
)
