package afxdp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma/busdmatest"
	"github.com/goiflib/goiflib/iflib"
)

// TestRxFromPeer: frames a raw socket sends on the peer end arrive through
// iflib RX byte-identical, in order, in native and generic XDP mode; small
// ones take iflib's copy path and large ones hand the UMEM cluster up.
func TestRxFromPeer(t *testing.T) {
	needAFXDP(t)
	for _, mode := range []XDPMode{XDPNative, XDPGeneric} {
		t.Run(mode.String(), func(t *testing.T) {
			rig := newRig(t, RigConfig{})
			p := rig.Pairs[0]
			sk := newSink()
			d, ic := startDriver(t, rig, Config{Interface: p.A, XDPMode: mode, NRxd: 256, NTxd: 256, Checker: busdmatest.NewChecker(t)},
				iflib.Attachment{Input: sk.input, Config: iflib.Config{RxZoneSize: 1024}})

			raw, err := rig.OpenRaw(p.B)
			require.NoError(t, err)
			defer raw.Close()
			const n = 2000
			var want [][]byte
			buf := make([]byte, 1514)
			for i := 0; i < n; i++ {
				size := 60 + (i*97)%(1514-60+1) // 60..1514, copy path and cluster path
				f := TestFrame(buf, size, p.AMAC, p.BMAC, uint64(i))
				want = append(want, append([]byte(nil), f...))
				sendRetry(t, raw, f)
				if i%32 == 31 {
					waitFor(t, time.Second, func() bool { return sk.count() >= i-64 })
				}
			}
			require.True(t, waitFor(t, 5*time.Second, func() bool { return sk.count() >= n }), "received %d of %d (stats %+v)", sk.count(), n, d.Stats())
			sk.mu.Lock()
			for i, f := range sk.frames {
				require.Equal(t, want[i], f, "frame %d", i)
			}
			sk.mu.Unlock()
			st, err := ic.RxQueueStats(0)
			require.NoError(t, err)
			require.NotZero(t, st.Copies, "no frame took the copy path")
			require.NotZero(t, st.BAReuses, "no cluster was reposted by its ifsd_ba")
			require.NoError(t, ic.Detach())
		})
	}
}
