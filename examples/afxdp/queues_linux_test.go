package afxdp

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma/busdmatest"
	"github.com/goiflib/goiflib/iflib"
)

// TestTwoQueues: by default every RX queue of the interface gets a
// socket (one iflib queue pair each); frames arriving on either queue
// reach iflib, and transmits spread over both TX queues by flow id.
func TestTwoQueues(t *testing.T) {
	needAFXDP(t)
	rig := newRig(t, RigConfig{Queues: 2})
	p := rig.Pairs[0]
	u := newUMEM(t, 4096)
	txz, err := u.NewZone("tx", 256)
	require.NoError(t, err)
	sk := newSink()
	_, ic := startDriver(t, rig, Config{Interface: p.A, UMEM: u, NRxd: 128, NTxd: 128, Checker: busdmatest.NewChecker(t)},
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
// ErrLinkDown), and back up. While it is down, with nothing queued and
// the timer ticking every millisecond, TxBacklog stays 0 (review P7: it
// counted the TX task's mp_ring sentinels, 2046 of them).
func TestLinkState(t *testing.T) {
	needAFXDP(t)
	rig := newRig(t, RigConfig{})
	p := rig.Pairs[0]
	u := newUMEM(t, 2048)
	txz, err := u.NewZone("tx", 8)
	require.NoError(t, err)
	_, ic := startDriver(t, rig, Config{Interface: p.A, UMEM: u, NRxd: 64, NTxd: 64},
		iflib.Attachment{Config: iflib.Config{RxZoneSize: 256, TimerInterval: time.Millisecond}})
	require.NoError(t, rig.SetLink(p.B, false))
	require.True(t, waitFor(t, 2*time.Second, func() bool { return ic.LinkState() == iflib.LinkStateDown }), "link stayed %v", ic.LinkState())
	time.Sleep(100 * time.Millisecond) // a hundred timer ticks
	assert.Zero(t, ic.TxBacklog(0), "backlog with nothing queued")
	m, _ := txz.Get()
	m.Append(make([]byte, 60))
	assert.ErrorIs(t, ic.Transmit(m), iflib.ErrLinkDown)
	require.NoError(t, rig.SetLink(p.B, true))
	require.True(t, waitFor(t, 2*time.Second, func() bool { return ic.LinkState() == iflib.LinkStateUp }), "link stayed %v", ic.LinkState())
	require.NoError(t, ic.Detach())
}

// TestUnboundQueuesRefused: a QueueIDs list that leaves an RX queue of a
// multi-queue interface without a socket is refused with a typed error
// naming the interface and its queue count (frames the kernel steers to
// that queue would pass the driver by), unless PartialQueues says so; then
// Logf names the queues left.
func TestUnboundQueuesRefused(t *testing.T) {
	needAFXDP(t)
	rig := newRig(t, RigConfig{Queues: 2})
	p := rig.Pairs[0]
	before := snapshot(t, rig)
	for _, ids := range [][]int{{0}, {1}} {
		d, err := Attach(Config{Interface: p.A, NetNS: rig.NetNSPath(), QueueIDs: ids, NRxd: 64, NTxd: 64}, iflib.Attachment{})
		require.ErrorIs(t, err, ErrUnboundQueues, "QueueIDs %v", ids)
		assert.Nil(t, d)
		assert.Contains(t, err.Error(), p.A+" has 2 RX queues")
	}
	var logs []string
	d, err := Attach(Config{Interface: p.A, NetNS: rig.NetNSPath(), QueueIDs: []int{1}, PartialQueues: true, NRxd: 64, NTxd: 64,
		Logf: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }}, iflib.Attachment{})
	require.NoError(t, err)
	require.Equal(t, 1, d.Context().NumRxQueues())
	require.Len(t, logs, 1)
	assert.Contains(t, logs[0], p.A+": RX queues [0] of 2 are not bound")
	require.NoError(t, d.Context().Detach())
	before.requireSame(t, rig)
}
