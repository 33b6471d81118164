package iflib

import (
	"errors"
	"fmt"
)

// Sentinel errors. Hot paths return these values; they never build an error
// per call.
var (
	// ErrNotRunning is ENETDOWN: the interface is not IFF_DRV_RUNNING or the
	// link is down. The packet was freed and counted in oqdrops.
	ErrNotRunning = errors.New("iflib: interface not running (ENETDOWN)")
	// ErrNoBufs is ENOBUFS: a ring or the descriptors were full and the mode
	// drops. The packet was freed and counted.
	ErrNoBufs = errors.New("iflib: no buffer space (ENOBUFS)")
	// ErrNoMem is ENOMEM: a DMA mapping could not be set up (bounce pages,
	// defrag failed). The packet was freed and counted.
	ErrNoMem = errors.New("iflib: cannot map packet (ENOMEM)")
	// ErrTooBig is a packet larger than the TX tag's maxsize (EINVAL from
	// bus_dmamap_load_mbuf_sg). The packet was freed and counted.
	ErrTooBig = errors.New("iflib: packet larger than the DMA tag allows")
	// ErrEmptyPacket is a packet with no bytes. It was freed and counted.
	ErrEmptyPacket = errors.New("iflib: empty packet")
	// ErrNilPacket is a nil packet; nothing was counted.
	ErrNilPacket = errors.New("iflib: nil packet")
	// ErrNoPackets is an exhausted packet zone (uma_zalloc M_NOWAIT failing).
	ErrNoPackets = errors.New("iflib: packet zone exhausted")
	// ErrState is a lifecycle call in the wrong state (init before attach,
	// detach while running, ...).
	ErrState = errors.New("iflib: wrong context state")
	// ErrDoubleFree is a packet freed twice; the second free is ignored.
	ErrDoubleFree = errors.New("iflib: packet freed twice")
)

// ConfigError reports an invalid attach parameter (the checks of
// _iflib_assert, _iflib_pre_assert and iflib_reset_qvalues). It matches
// ErrConfig with errors.Is.
type ConfigError struct {
	Field  string // the if_shared_ctx / if_softc_ctx field, Go-named
	Value  any
	Reason string
}

// ErrConfig is matched by every *ConfigError.
var ErrConfig = errors.New("iflib: invalid configuration")

func (e *ConfigError) Error() string {
	return fmt.Sprintf("iflib: invalid %s = %v: %s", e.Field, e.Value, e.Reason)
}

// Is makes errors.Is(err, ErrConfig) true.
func (e *ConfigError) Is(target error) bool { return target == ErrConfig }

func cfgErr(field string, v any, reason string) error {
	return &ConfigError{Field: field, Value: v, Reason: reason}
}
