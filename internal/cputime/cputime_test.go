package cputime

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestProcessAdvances(t *testing.T) {
	if !Supported {
		assert.Zero(t, Process())
		return
	}
	t0 := Process()
	x := uint64(1)
	for deadline := time.Now().Add(5 * time.Second); Process()-t0 < 20*time.Millisecond && time.Now().Before(deadline); {
		for range 1 << 16 {
			x = x*6364136223846793005 + 1
		}
	}
	assert.NotZero(t, x)
	assert.GreaterOrEqual(t, Process()-t0, 20*time.Millisecond, "20 ms of spinning shows as CPU time")
}

// Read's CPU time advances with spinning, as Process's does, and its
// involuntary switches never go back; where nothing is measured it is zero.
func TestReadAdvances(t *testing.T) {
	if !Supported {
		assert.Zero(t, Read())
		return
	}
	u0 := Read()
	x := uint64(1)
	for deadline := time.Now().Add(5 * time.Second); Read().CPU-u0.CPU < 20*time.Millisecond && time.Now().Before(deadline); {
		for range 1 << 16 {
			x = x*6364136223846793005 + 1
		}
	}
	assert.NotZero(t, x)
	u1 := Read()
	d := u1.Sub(u0)
	assert.GreaterOrEqual(t, d.CPU, 20*time.Millisecond, "20 ms of spinning shows as CPU time")
	assert.GreaterOrEqual(t, u1.InvolSwitches, u0.InvolSwitches, "ru_nivcsw never decreases")
	assert.LessOrEqual(t, u1.CPU-Process(), time.Duration(0), "Process is Read().CPU, read later")
}
