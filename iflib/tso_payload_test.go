package iflib_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/examples/simnic/simnictest"
	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/testutil"
)

// TestTSOWithoutPayload: a TSO packet with nothing after its TCP header
// (FreeBSD accepts it and the device drops it whole) is refused with
// ErrTSONoPayload, a kind of ErrBadHeader, freed and counted in oerrors;
// nothing reaches the wire, and a TSO packet with one payload byte still
// goes out.
func TestTSOWithoutPayload(t *testing.T) {
	rec := &simnictest.Recorder{}
	r := simnictest.New(t, simnictest.Options{NIC: simnic.Config{NTxd: 256, NRxd: 64, Offload: true},
		Config: iflib.Config{TxMode: iflib.TxModeSimple}, Peer: rec})
	hdrs := tsoPacket(t, r, 1, 1554, 500, 1)
	hdrs.SetLen(54) // Ethernet + IPv4 + TCP, no payload
	hdrs.Hdr.Len = 0
	err := r.Ctx.Transmit(hdrs)
	require.ErrorIs(t, err, iflib.ErrTSONoPayload)
	require.ErrorIs(t, err, iflib.ErrBadHeader)
	testutil.Eventually(t, "oerrors", func() bool { return r.Ctx.Counter(iflib.IfCounterOErrors) == 1 })
	require.NoError(t, r.Ctx.Transmit(tsoPacket(t, r, 2, 55, 500, 1)))
	testutil.Eventually(t, "one frame on the wire", func() bool { return rec.Len() == 1 })
	require.Equal(t, 55, len(rec.Frames()[0]))
}
