package simnic

import (
	"sync/atomic"
	"time"
)

// interrupts raises the link interrupt when LSC is latched and enabled,
// and each pending, enabled queue interrupt at most once per ITR, masking
// it (auto-mask, EIAM) until the driver re-enables it. It returns how long
// until a moderated interrupt is due (0: none waiting).
//
// Every queue interrupt raised is one event of the schedule's interrupt
// stream: a lost one is masked and its cause consumed but the handler
// never runs (a lost MSI-X message: only the driver's timer finds the
// work); a spurious one runs a queue's handler with no cause.
func (n *NIC) interrupts() time.Duration {
	if n.lsc.Load() && n.lscEn.Load() && n.lsc.CompareAndSwap(true, false) {
		n.st.linkIntrs.Add(1)
		n.isr(causeLink, 0)
	}
	var wait time.Duration
	now := time.Time{}
	fire := func(pend *bool, en *atomic.Bool, last *time.Time, c intrCause, i int) {
		if !*pend || !en.Load() {
			return
		}
		if n.cfg.ITR > 0 {
			if now.IsZero() {
				now = time.Now()
			}
			if d := n.cfg.ITR - now.Sub(*last); d > 0 {
				if wait == 0 || d < wait {
					wait = d
				}
				return
			}
			*last = now
		}
		if !en.CompareAndSwap(true, false) {
			return
		}
		*pend = false
		n.nintr++
		if n.sch.hit(FaultLostIntr, 0, n.nintr) {
			n.st.lostIntrs.Add(1)
			return
		}
		if c == causeTx {
			n.st.txIntrs.Add(1)
		} else {
			n.st.rxIntrs.Add(1)
		}
		n.isr(c, i)
		if n.sch.hit(FaultSpuriousIntr, 0, n.nintr) {
			nq := max(n.ntxActive, 1)
			r := n.sch.draw(FaultSpuriousIntr, 0, uint64(nq))
			q := int(r/2) % nq
			sc := causeTx
			if r&1 != 0 {
				sc = causeRx
			}
			n.st.spuriousIntrs.Add(1)
			n.isr(sc, q)
		}
	}
	for i := range n.txq {
		q := &n.txq[i]
		fire(&q.pend, &q.intrEn, &q.lastIntr, causeTx, i)
	}
	for i := range n.rxq {
		q := &n.rxq[i]
		fire(&q.pend, &q.intrEn, &q.lastIntr, causeRx, i)
	}
	return wait
}
