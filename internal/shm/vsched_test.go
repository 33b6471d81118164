//go:build goiflib_vsched

package shm

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/internal/vsched"
)

// Under the tag, Mutex excludes and Parker never loses a wake-up in any
// schedule with up to 3 preemptions.
func TestMutexExcludesInEverySchedule(t *testing.T) {
	rep, err := vsched.Exhaustive(vsched.Config{}, 3, 0, func(s *vsched.Sim) func() error {
		var m Mutex
		var n Int64 // read and written only under m, as a load then a store
		inside := 0
		bad := false
		for range 3 {
			s.Go(func() {
				m.Lock()
				inside++
				bad = bad || inside > 1
				n.Store(n.Load() + 1)
				inside--
				m.Unlock()
			})
		}
		return func() error {
			if bad || n.Load() != 3 {
				return fmt.Errorf("mutual exclusion broken: count %d, overlap %v", n.Load(), bad)
			}
			return nil
		}
	})
	require.NoError(t, err)
	assert.True(t, rep.Complete)
	t.Logf("%d schedules", rep.Schedules)
}

func TestParkerLosesNoWakeup(t *testing.T) {
	rep, err := vsched.Exhaustive(vsched.Config{}, 3, 0, func(s *vsched.Sim) func() error {
		p := NewParker()
		var flag Bool
		s.Go(func() {
			for !flag.Load() {
				p.Park()
			}
		})
		s.Go(func() {
			flag.Store(true)
			p.Unpark()
		})
		return nil // a lost wake-up ends in vsched.ErrDeadlock
	})
	require.NoError(t, err)
	assert.True(t, rep.Complete)
}
