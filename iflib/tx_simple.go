package iflib

import "sync"

// The simple transmit mode (TxModeSimple): iflib_simple_transmit. No
// software ring: a sender encapsulates under the queue lock (ift_mtx),
// rings the doorbell and reclaims opportunistically; a lack of descriptors
// drops. The descriptor ring is owned by the holder of the lock.

// simpleMode is TxModeSimple to the whole context.
type simpleMode struct{}

func (simpleMode) newPath(q *txq) (txPath, error) { return &simplePath{q: q}, nil }

// driverSelect: iflib_simple_select_queue does not ask the driver.
func (simpleMode) driverSelect() bool { return false }

func (simpleMode) sysctl(*Node, *Config) {}

// simplePath is one queue's lock.
type simplePath struct {
	q  *txq
	mu sync.Mutex // ift_mtx
}

func (p *simplePath) send(m *Packet) error {
	q := p.q
	p.mu.Lock()
	err := q.simpleEncap(m)
	q.dbCheck(true)
	q.completedReclaim()
	q.publish()
	p.mu.Unlock()
	return err
}

func (p *simplePath) sendBatch(ms []*Packet, errs []error) (int, error) {
	q := p.q
	sent := 0
	var first error
	p.mu.Lock()
	for i, m := range ms {
		if err := q.simpleEncap(m); err != nil {
			if errs != nil {
				errs[i] = err
			}
			if first == nil {
				first = err
			}
			continue
		}
		sent++
	}
	q.dbCheck(true)
	q.completedReclaim()
	q.publish()
	p.mu.Unlock()
	return sent, first
}

// simpleEncap is iflib_encap in simple mode: no descriptors drops.
// Preconditions: the queue's consumer (simple mode: its lock held).
func (q *txq) simpleEncap(m *Packet) error {
	err := q.encap(&m)
	if err == errNoDesc {
		q.st.inc(txOQDrops, 1)
		m.Free()
	}
	return err
}

func (p *simplePath) task() {
	// The task never waits for a sender (Stop waits for the task, and a
	// sender may hold the lock past StopTimeout): the holder reclaims and
	// rings before it unlocks; the task looks again shortly.
	q := p.q
	if !p.mu.TryLock() {
		q.retrySoon()
		return
	}
	q.completedReclaim()
	q.dbCheck(true)
	q.publish()
	p.mu.Unlock()
}

func (p *simplePath) start()       {}
func (p *simplePath) stop()        {}
func (p *simplePath) purge()       {} // nothing is queued outside the descriptor ring
func (p *simplePath) backlog() int { return 0 }
func (p *simplePath) restart()     {} // nothing stalls: a sender that finds no descriptors drops
func (p *simplePath) sysctl(*Node) {}
