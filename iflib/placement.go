package iflib

import (
	"errors"
	"fmt"

	"github.com/goiflib/goiflib/cpumap"
)

// placement is the CPUs chosen for a context's queue tasks
// (iflib_irq_set_affinity), with the detach refcount.
type placement struct {
	pl *cpumap.Placement
}

func (p *placement) txCPU(i int) int {
	if p == nil || p.pl == nil || i >= len(p.pl.TxCPU) {
		return -1
	}
	return p.pl.TxCPU[i]
}

func (p *placement) rxCPU(i int) int {
	if p == nil || p.pl == nil || i >= len(p.pl.RxCPU) {
		return -1
	}
	return p.pl.RxCPU[i]
}

func (p *placement) release() {
	if p != nil && p.pl != nil {
		p.pl.Release()
	}
}

// placeQueues is get_ctx_core_offset + get_cpuid_for_queue for every queue.
func placeQueues(c *Context) (*placement, error) {
	alloc := c.alloc
	if alloc == nil {
		var err error
		if alloc, err = cpumap.DefaultAllocator(); err != nil {
			return nil, fmt.Errorf("iflib: %s: CPU topology: %w", c.name, err)
		}
	}
	pl, err := alloc.Place(cpumap.Request{
		Device:   c.name,
		RxQueues: len(c.rxqs),
		TxQueues: len(c.txqs),
		Policy: cpumap.Policy{
			CoreOffset:      coreOffset(c.cfg.CoreOffset),
			SeparateTxRx:    c.cfg.SeparateTxRx,
			UseLogicalCores: c.cfg.UseLogicalCores,
		},
	})
	if errors.Is(err, cpumap.ErrCoreOffset) {
		return nil, &ConfigError{Pkg: "iflib", Field: "CoreOffset", Value: c.cfg.CoreOffset, Reason: "no such CPU", Err: err}
	}
	if err != nil {
		return nil, fmt.Errorf("iflib: %s: queue placement: %w", c.name, err)
	}
	return &placement{pl: pl}, nil
}

// coreOffset maps Config.CoreOffset to cpumap's: nil is automatic.
func coreOffset(v int) *int {
	switch {
	case v == 0:
		return nil
	case v < 0:
		v = 0
	}
	return &v
}

// Placement returns the printable queue-to-CPU map of the context.
func (c *Context) Placement() string {
	if c.placement == nil || c.placement.pl == nil {
		return ""
	}
	return c.placement.pl.Map()
}
