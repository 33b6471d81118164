package afxdp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma/busdmatest"
	"github.com/goiflib/goiflib/iflib"
)

// TestTwoQueues: one socket per configured queue id; frames arriving on
// either queue reach iflib, and transmits spread over both TX queues by
// flow id.
func TestTwoQueues(t *testing.T) {
	needAFXDP(t)
	rig := newRig(t, RigConfig{Queues: 2})
	p := rig.Pairs[0]
	u := newUMEM(t, 4096)
	txz, err := u.NewZone("tx", 256)
	require.NoError(t, err)
	sk := newSink()
	_, ic := startDriver(t, rig, Config{Interface: p.A, UMEM: u, QueueIDs: []int{0, 1}, NRxd: 128, NTxd: 128, Checker: busdmatest.NewChecker(t)},
		iflib.Attachment{Input: sk.input, Config: iflib.Config{RxZoneSize: 512}})
	require.Equal(t, 2, ic.NumRxQueues())
	require.Equal(t, 2, xskCount(t, rig), "one socket per queue")

	raw, err := rig.OpenRaw(p.B)
	require.NoError(t, err)
	defer raw.Close()
	buf := make([]byte, 128)
	const n = 500
	for i := 0; i < n; i++ {
		sendRetry(t, raw, TestFrame(buf, 100, p.AMAC, p.BMAC, uint64(i)))
		if i%32 == 31 {
			waitFor(t, time.Second, func() bool { return sk.count() >= i-64 })
		}
	}
	require.True(t, waitFor(t, 5*time.Second, func() bool { return sk.count() >= n }), "received %d of %d", sk.count(), n)

	for i := 0; i < 200; i++ {
		m, err := txz.Get()
		for err != nil {
			time.Sleep(time.Millisecond)
			m, err = txz.Get()
		}
		m.Append(TestFrame(buf, 100, p.BMAC, p.AMAC, uint64(i)))
		m.Hdr.FlowID, m.Hdr.HashType = uint32(i), iflib.HashOpaque
		require.NoError(t, ic.Transmit(m))
	}
	for q := 0; q < 2; q++ {
		st, err := ic.TxQueueStats(q)
		require.NoError(t, err)
		assert.NotZero(t, st.OPackets, "TX queue %d sent nothing", q)
	}
	require.NoError(t, ic.Detach())
	assert.Zero(t, xskCount(t, rig))
}

// TestLinkState: the driver follows the interface's operational state:
// the peer going down takes the link down (Transmit fails with
// ErrLinkDown), and back up.
func TestLinkState(t *testing.T) {
	needAFXDP(t)
	rig := newRig(t, RigConfig{})
	p := rig.Pairs[0]
	u := newUMEM(t, 2048)
	txz, err := u.NewZone("tx", 8)
	require.NoError(t, err)
	_, ic := startDriver(t, rig, Config{Interface: p.A, UMEM: u, NRxd: 64, NTxd: 64}, iflib.Attachment{Config: iflib.Config{RxZoneSize: 256}})
	require.NoError(t, rig.SetLink(p.B, false))
	require.True(t, waitFor(t, 2*time.Second, func() bool { return ic.LinkState() == iflib.LinkStateDown }), "link stayed %v", ic.LinkState())
	m, _ := txz.Get()
	m.Append(make([]byte, 60))
	assert.ErrorIs(t, ic.Transmit(m), iflib.ErrLinkDown)
	require.NoError(t, rig.SetLink(p.B, true))
	require.True(t, waitFor(t, 2*time.Second, func() bool { return ic.LinkState() == iflib.LinkStateUp }), "link stayed %v", ic.LinkState())
	require.NoError(t, ic.Detach())
}
