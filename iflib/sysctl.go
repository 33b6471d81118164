package iflib

import (
	"expvar"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/goiflib/goiflib/mpring"
)

// Node is one node of the sysctl-style tree iflib publishes for a context
// (iflib_add_device_sysctl_pre/_post, iflib_add_queue_sysctls): an interior
// node has Children, a leaf has get.
type Node struct {
	Name     string
	Desc     string
	Children []*Node
	get      func() any
}

// Value reads a leaf (uint64, int, bool or string); interior nodes give nil.
func (n *Node) Value() any {
	if n.get == nil {
		return nil
	}
	return n.get()
}

func (n *Node) child(name, desc string) *Node {
	c := &Node{Name: name, Desc: desc}
	n.Children = append(n.Children, c)
	return c
}

func (n *Node) leaf(name, desc string, get func() any) {
	n.Children = append(n.Children, &Node{Name: name, Desc: desc, get: get})
}

// Lookup finds a node by its dotted path below n ("iflib.txq0.r_drops").
func (n *Node) Lookup(path string) (*Node, bool) {
	cur := n
	for _, part := range strings.Split(path, ".") {
		var next *Node
		for _, c := range cur.Children {
			if c.Name == part {
				next = c
				break
			}
		}
		if next == nil {
			return nil, false
		}
		cur = next
	}
	return cur, true
}

// Walk calls fn for every leaf with its full dotted path.
func (n *Node) Walk(fn func(path string, v any)) { n.walk(n.Name, fn) }

func (n *Node) walk(prefix string, fn func(string, any)) {
	if n.get != nil {
		fn(prefix, n.get())
		return
	}
	for _, c := range n.Children {
		c.walk(prefix+"."+c.Name, fn)
	}
}

// Sysctl returns the context's tree, rooted at dev.<driver>.<unit>.
func (c *Context) Sysctl() *Node { return c.sysctl }

// SysctlValue reads one leaf by its full name, for example
// "dev.simnic.0.iflib.txq0.r_drops".
func (c *Context) SysctlValue(name string) (any, bool) {
	prefix := c.sysctl.Name + "."
	if !strings.HasPrefix(name, prefix) {
		return nil, false
	}
	n, ok := c.sysctl.Lookup(strings.TrimPrefix(name, prefix))
	if !ok || n.get == nil {
		return nil, false
	}
	return n.get(), true
}

func u(v interface{ Load() uint64 }) func() any { return func() any { return v.Load() } }

func (c *Context) buildSysctl() *Node {
	root := &Node{Name: fmt.Sprintf("dev.%s.%d", c.shared.DriverName, c.cfg.Unit)}
	ifl := root.child("iflib", "IFLIB fields")
	ifl.leaf("driver_version", "driver version", func() any { return c.shared.DriverVersion })
	ifl.leaf("simple_tx", "use simple tx ring", func() any { return c.cfg.TxMode == TxModeSimple })
	ifl.leaf("tx_mode", "transmit mode (goiflib: mpring, simple or drbr)", func() any { return c.cfg.TxMode.String() })
	ifl.leaf("tx_abdicate", "cause TX to abdicate instead of running to completion", func() any { return c.cfg.TxAbdicate })
	ifl.leaf("rx_budget", "set the RX budget", func() any { return c.rxBudget() })
	ifl.leaf("separate_txrx", "use separate cores for TX and RX", func() any { return c.cfg.SeparateTxRx })
	ifl.leaf("use_logical_cores", "try to make use of logical cores for TX and RX", func() any { return c.cfg.UseLogicalCores })
	ifl.leaf("core_offset", "offset to start using cores at", func() any {
		if c.placement != nil && c.placement.pl != nil {
			return c.placement.pl.Base
		}
		return -1
	})
	ifl.leaf("resets", "resets done by the admin task (goiflib)", func() any { return c.resets.Load() })
	width := len(fmt.Sprint(max(len(c.txqs), len(c.rxqs)) - 1))
	for _, q := range c.txqs {
		q := q
		n := ifl.child(fmt.Sprintf("txq%0*d", width, q.id), "Queue Name")
		n.leaf("cpu", "CPU this queue is bound to", func() any { return q.cpu })
		n.leaf("m_pullups", "# of times m_pullup was called", u(&q.st.pullups))
		n.leaf("mbuf_defrag", "# of times m_defrag was called", u(&q.st.mbufDefrag))
		n.leaf("mbuf_defrag_failed", "# of times m_defrag failed", u(&q.st.mbufDefragFailed))
		n.leaf("no_desc_avail", "# of times no descriptors were available", u(&q.st.noDescAvail))
		n.leaf("tx_map_failed", "# of times DMA map failed", u(&q.st.mapFailed))
		n.leaf("txd_encap_efbig", "# of times txd_encap returned EFBIG", u(&q.st.encapEFBIG))
		n.leaf("no_tx_dma_setup", "# of times map failed for other than EFBIG", u(&q.st.noTxDMASetup))
		n.leaf("txq_pidx", "Producer Index", func() any { return q.st.pidxA.Load() })
		n.leaf("txq_cidx", "Consumer Index", func() any { return q.st.cidxA.Load() })
		n.leaf("txq_in_use", "descriptors in use", func() any { return q.st.inUseA.Load() })
		n.leaf("txq_processed", "descriptors procesed for clean", u(&q.st.processedA))
		n.leaf("txq_cleaned", "total cleaned", u(&q.st.cleanedA))
		n.leaf("doorbells", "isc_txd_flush calls (goiflib)", u(&q.st.doorbells))
		n.leaf("reclaimed", "packets freed by reclaim (goiflib)", u(&q.st.reclaimed))
		n.leaf("collapses", "m_collapse attempts after EFBIG (goiflib)", u(&q.st.collapses))
		n.leaf("task_runs", "TX task passes (goiflib)", u(&q.st.taskRuns))
		n.leaf("txq_drain_notready", "drains while not running", u(&q.st.drainNotReady))
		n.leaf("txq_drain_nodesc", "drains stalled for lack of descriptors (goiflib)", u(&q.st.drainNoDesc))
		n.leaf("opackets", "IFCOUNTER_OPACKETS of this queue (goiflib)", u(&q.st.oPackets))
		n.leaf("obytes", "IFCOUNTER_OBYTES of this queue (goiflib)", u(&q.st.oBytes))
		n.leaf("oqdrops", "IFCOUNTER_OQDROPS of this queue (goiflib)", u(&q.st.oqDrops))
		n.leaf("oerrors", "IFCOUNTER_OERRORS of this queue (goiflib)", u(&q.st.oErrors))
		if q.mpr != nil {
			r := q.mpr
			n.leaf("ring_state", "soft ring state", func() any { return ringState(r.State()) })
			n.leaf("r_enqueues", "# of enqueues to the mp_ring for this queue", func() any { return r.Stats().Enqueues })
			n.leaf("r_drops", "# of drops in the mp_ring for this queue", func() any { return r.Stats().Drops })
			n.leaf("r_starts", "# of normal consumer starts in the mp_ring for this queue", func() any { return r.Stats().Starts })
			n.leaf("r_stalls", "# of consumer stalls in the mp_ring for this queue", func() any { return r.Stats().Stalls })
			n.leaf("r_restarts", "# of consumer restarts in the mp_ring for this queue", func() any { return r.Stats().Restarts })
			n.leaf("r_abdications", "# of consumer abdications in the mp_ring for this queue", func() any { return r.Stats().Abdications })
		}
		if q.drbr != nil {
			d := q.drbr
			n.leaf("br_direct", "sent directly under the lock (goiflib drbr)", func() any { return d.Stats().Direct })
			n.leaf("br_deferred", "deferred into the buf_ring (goiflib drbr)", func() any { return d.Stats().Deferred })
			n.leaf("br_lock_waits", "senders that waited for the lock (goiflib drbr)", func() any { return d.Stats().LockWaits })
			n.leaf("br_full_waits", "senders that waited for ring space (goiflib drbr)", func() any { return d.Stats().FullWaits })
			n.leaf("br_drained", "sent by the TX task's drain (goiflib drbr)", func() any { return d.Stats().Drained })
		}
	}
	for _, q := range c.rxqs {
		q := q
		n := ifl.child(fmt.Sprintf("rxq%0*d", width, q.id), "Queue Name")
		n.leaf("cpu", "CPU this queue is bound to", func() any { return q.cpu })
		n.leaf("ipackets", "packets received (goiflib)", u(&q.st.iPackets))
		n.leaf("ibytes", "bytes received (goiflib)", u(&q.st.iBytes))
		n.leaf("iqdrops", "packets dropped for lack of buffers (goiflib)", u(&q.st.iqDrops))
		n.leaf("ierrors", "bad descriptors from the device (goiflib)", u(&q.st.iErrors))
		n.leaf("rx_copies", "small packets copied (goiflib)", u(&q.st.copies))
		n.leaf("rx_filtered", "frames dropped by the early-drop filter (goiflib)", u(&q.st.filtered))
		n.leaf("rx_unavail", "rxeof passes with nothing available", u(&q.st.rxUnavail))
		n.leaf("rx_if_input", "if_input calls", u(&q.st.rxIfInput))
		n.leaf("rxd_flush", "isc_rxd_flush calls", u(&q.st.rxdFlush))
		n.leaf("rx_watchdogs", "RX watchdog arms (goiflib)", u(&q.st.watchdogs))
		n.leaf("rx_intr_enables", "RX interrupt enables", u(&q.st.intrEnables))
		for _, fl := range q.fls {
			fl := fl
			f := n.child(fmt.Sprintf("rxq_fl%d", fl.id), "freelist Name")
			f.leaf("pidx", "Producer Index", func() any { return fl.pidxA.Load() })
			f.leaf("cidx", "Consumer Index", func() any { return fl.cidxA.Load() })
			f.leaf("credits", "credits available", func() any { return fl.creditsA.Load() })
			f.leaf("buf_size", "buffer size", func() any { return fl.bufSize })
			f.leaf("map_loads", "bus_dmamap_load calls (goiflib)", u(&fl.loads))
			f.leaf("ba_reuses", "buffers reposted by ifsd_ba without a load (goiflib)", u(&fl.reuses))
			f.leaf("alloc_fails", "cluster allocation failures (goiflib)", u(&fl.allocFails))
			f.leaf("load_fails", "map load failures (goiflib)", u(&fl.loadFails))
		}
	}
	cn := root.child("counters", "interface counters (if_get_counter; goiflib)")
	for _, ic := range []struct {
		name string
		c    IfCounter
	}{{"ipackets", IfCounterIPackets}, {"ierrors", IfCounterIErrors}, {"opackets", IfCounterOPackets},
		{"oerrors", IfCounterOErrors}, {"ibytes", IfCounterIBytes}, {"obytes", IfCounterOBytes},
		{"omcasts", IfCounterOMcasts}, {"iqdrops", IfCounterIQDrops}, {"oqdrops", IfCounterOQDrops}} {
		ic := ic
		cn.leaf(ic.name, "", func() any { return c.Counter(ic.c) })
	}
	return root
}

// ringState is mp_ring_state_handler's text.
func ringState(s mpring.State) string {
	return fmt.Sprintf("pidx_head: %04d pidx_tail: %04d cidx: %04d state: %s", s.PidxHead, s.PidxTail, s.Cidx, s.Flags)
}

// Counter is iflib_if_get_counter: the driver's IFDI_GET_COUNTER when it
// answers, else iflib's own sums over the queues.
func (c *Context) Counter(ic IfCounter) uint64 {
	if g, ok := c.dev.(CounterGetter); ok {
		if v, ok := g.GetCounter(c, ic); ok {
			return v
		}
	}
	var t uint64
	for _, q := range c.txqs {
		switch ic {
		case IfCounterOPackets:
			t += q.st.oPackets.Load()
		case IfCounterOBytes:
			t += q.st.oBytes.Load()
		case IfCounterOMcasts:
			t += q.st.oMcasts.Load()
		case IfCounterOQDrops:
			t += q.st.oqDrops.Load()
		case IfCounterOErrors:
			t += q.st.oErrors.Load()
		}
	}
	for _, q := range c.rxqs {
		switch ic {
		case IfCounterIPackets:
			t += q.st.iPackets.Load()
		case IfCounterIBytes:
			t += q.st.iBytes.Load()
		case IfCounterIQDrops:
			t += q.st.iqDrops.Load()
		case IfCounterIErrors:
			t += q.st.iErrors.Load()
		}
	}
	return t
}

// expvar publication: one variable "iflib" holding every registered
// context's leaves, keyed by interface name (expvar.Publish panics on a
// duplicate name, so contexts come and go inside one map).
var (
	expvarOnce sync.Once
	expvarCtxs sync.Map // name → *Context
)

func publishExpvar(c *Context) {
	expvarOnce.Do(func() {
		expvar.Publish("iflib", expvar.Func(func() any {
			out := map[string]map[string]any{}
			expvarCtxs.Range(func(k, v any) bool {
				m := map[string]any{}
				v.(*Context).sysctl.Walk(func(p string, val any) { m[p] = val })
				out[k.(string)] = m
				return true
			})
			return out
		}))
	})
	expvarCtxs.Store(c.name, c)
}

func unpublishExpvar(c *Context) { expvarCtxs.CompareAndDelete(c.name, c) }

// SysctlLines renders the tree as "name: value" lines, sorted.
func (c *Context) SysctlLines() []string {
	var out []string
	c.sysctl.Walk(func(p string, v any) { out = append(out, fmt.Sprintf("%s: %v", p, v)) })
	sort.Strings(out)
	return out
}
