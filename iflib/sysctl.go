package iflib

import (
	"expvar"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
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

// Sysctl returns the context's tree, rooted at dev.<driver>.<unit>. From
// an IFDI method during Register, before the queues exist, it is the root
// alone.
func (c *Context) Sysctl() *Node {
	if n := c.sysctl.Load(); n != nil {
		return n
	}
	return &Node{Name: c.sysctlRoot()}
}

func (c *Context) sysctlRoot() string {
	return fmt.Sprintf("dev.%s.%d", c.shared.DriverName, c.cfg.Unit)
}

// SysctlValue reads one leaf by its full name, for example
// "dev.simnic.0.iflib.txq0.r_drops". It reports false for a name that is
// not a leaf of the tree (and for every name before Register built it).
func (c *Context) SysctlValue(name string) (any, bool) {
	root := c.sysctl.Load()
	if root == nil {
		return nil, false
	}
	prefix := root.Name + "."
	if !strings.HasPrefix(name, prefix) {
		return nil, false
	}
	n, ok := root.Lookup(strings.TrimPrefix(name, prefix))
	if !ok || n.get == nil {
		return nil, false
	}
	return n.get(), true
}

func (c *Context) buildSysctl() *Node {
	root := &Node{Name: c.sysctlRoot()}
	c.ctlSysctl(root)
	ifl := root.child("iflib", "IFLIB fields")
	cfg := c.cfg
	ifl.leaf("driver_version", "driver version", func() any { return c.shared.DriverVersion })
	ifl.leaf("simple_tx", "use simple tx ring", func() any { return cfg.TxMode == TxModeSimple })
	ifl.leaf("tx_mode", "transmit mode (goiflib: mpring, simple or drbr)", func() any { return cfg.TxMode.String() })
	ifl.leaf("tx_abdicate", "cause TX to abdicate instead of running to completion", func() any { return cfg.TxAbdicate })
	ifl.leaf("rx_budget", "set the RX budget", func() any { return cfg.RxBudget })
	ifl.leaf("rx_per_packet", "Input once per packet after each rxeof pass (goiflib)", func() any { return cfg.RxPerPacket })
	ifl.leaf("rx_per_packet_input", "Input per packet inside the rxeof loop, if_input per mbuf (goiflib)", func() any { return cfg.RxPerPacketInput })
	ifl.leaf("rx_sort_by_flow", "sort each RX batch by flow id (goiflib)", func() any { return cfg.RxSortByFlow })
	ifl.leaf("separate_txrx", "use separate cores for TX and RX", func() any { return cfg.SeparateTxRx })
	ifl.leaf("use_logical_cores", "try to make use of logical cores for TX and RX", func() any { return cfg.UseLogicalCores })
	ifl.leaf("core_offset", "offset to start using cores at", func() any {
		if c.placement != nil && c.placement.pl != nil {
			return c.placement.pl.Base
		}
		return -1
	})
	ifl.leaf("tx_watchdog_periods", "timer periods a hung TX queue waits before a reset", func() any { return cfg.TxWatchdogPeriods })
	ifl.leaf("resets", "resets done by the admin task (goiflib)", func() any { return c.admin.resets.Load() })
	ifl.leaf("watchdog_events", "TX watchdog resets (ifc_watchdog_events)", func() any { return c.admin.watchdogEvents.Load() })
	pathFor(cfg.TxMode).sysctl(ifl, &cfg)
	width := len(fmt.Sprint(max(len(c.txqs), len(c.rxqs)) - 1))
	for _, q := range c.txqs {
		n := ifl.child(fmt.Sprintf("txq%0*d", width, q.id), "Queue Name")
		n.leaf("cpu", "CPU this queue is bound to", func() any { return q.cpu })
		for i, d := range txCounterTable {
			n.leaf(d.name, d.desc, func() any { return q.st.load(txCounter(i)) })
		}
		n.leaf("txq_pidx", "Producer Index", func() any { return q.pidxA.Load() })
		n.leaf("txq_cidx", "Consumer Index", func() any { return q.cidxA.Load() })
		n.leaf("txq_in_use", "descriptors in use", func() any { return q.inUseA.Load() })
		n.leaf("txq_processed", "descriptors procesed for clean", func() any { return q.processedA.Load() })
		n.leaf("txq_cleaned", "total cleaned", func() any { return q.cleanedA.Load() })
		q.path.sysctl(n)
	}
	for _, q := range c.rxqs {
		n := ifl.child(fmt.Sprintf("rxq%0*d", width, q.id), "Queue Name")
		n.leaf("cpu", "CPU this queue is bound to", func() any { return q.cpu })
		for i, d := range rxCounterTable {
			n.leaf(d.name, d.desc, func() any { return q.st.load(rxCounter(i)) })
		}
		for _, fl := range q.fls {
			f := n.child(fmt.Sprintf("rxq_fl%d", fl.id), "freelist Name")
			f.leaf("pidx", "Producer Index", func() any { return fl.pidxA.Load() })
			f.leaf("cidx", "Consumer Index", func() any { return fl.cidxA.Load() })
			f.leaf("credits", "credits available", func() any { return fl.creditsA.Load() })
			f.leaf("buf_size", "buffer size", func() any { return int(fl.bufSizeA.Load()) })
		}
	}
	cn := root.child("counters", "interface counters (if_get_counter; goiflib)")
	for _, ic := range []struct {
		name string
		c    IfCounter
	}{{"ipackets", IfCounterIPackets}, {"ierrors", IfCounterIErrors}, {"opackets", IfCounterOPackets},
		{"oerrors", IfCounterOErrors}, {"ibytes", IfCounterIBytes}, {"obytes", IfCounterOBytes},
		{"omcasts", IfCounterOMcasts}, {"iqdrops", IfCounterIQDrops}, {"oqdrops", IfCounterOQDrops}} {
		cn.leaf(ic.name, "", func() any { return c.Counter(ic.c) })
	}
	return root
}

// expvar publication: one variable "iflib" holding every registered
// context's leaves, keyed by ExpvarKey (expvar.Publish panics on a
// duplicate name, so contexts come and go inside one map). Keys are unique
// among the live contexts of a process, so no context hides another's
// counters.
var (
	expvarOnce sync.Once
	expvarMu   sync.Mutex
	expvarCtxs = map[string]*Context{} // guarded by expvarMu
)

func publishExpvar(c *Context) {
	expvarOnce.Do(func() {
		expvar.Publish("iflib", expvar.Func(func() any {
			expvarMu.Lock()
			ctxs := maps.Clone(expvarCtxs)
			expvarMu.Unlock()
			out := map[string]map[string]any{}
			for k, c := range ctxs {
				m := map[string]any{}
				c.Sysctl().Walk(func(p string, val any) { m[p] = val })
				out[k] = m
			}
			return out
		}))
	})
	expvarMu.Lock()
	defer expvarMu.Unlock()
	key := c.name
	for k := 2; expvarCtxs[key] != nil; k++ {
		key = fmt.Sprintf("%s#%d", c.name, k)
	}
	c.expvarKey = key
	expvarCtxs[key] = c
}

func unpublishExpvar(c *Context) {
	expvarMu.Lock()
	defer expvarMu.Unlock()
	if expvarCtxs[c.expvarKey] == c {
		delete(expvarCtxs, c.expvarKey)
	}
}

// ExpvarKey is the key of the context's leaves in the expvar variable
// "iflib": its Name, or, while another live context of the same name was
// published first (two devices of one driver and unit in one process, as
// test rigs make), Name + "#2", "#3", … — the first free. It is "" before
// Register returns and stays set after Detach (which unpublishes it).
func (c *Context) ExpvarKey() string { return c.expvarKey }

// SysctlLines renders the tree as "name: value" lines, sorted.
func (c *Context) SysctlLines() []string {
	var out []string
	c.Sysctl().Walk(func(p string, v any) { out = append(out, fmt.Sprintf("%s: %v", p, v)) })
	sort.Strings(out)
	return out
}
