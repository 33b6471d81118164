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
