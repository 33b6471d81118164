package busdma

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSpinStepsScaleWithTime(t *testing.T) {
	require.Zero(t, spinStepsFor(0), "no time, no steps")
	require.Zero(t, spinStepsFor(-time.Second), "no time, no steps")
	one, two := spinStepsFor(time.Microsecond), spinStepsFor(2*time.Microsecond)
	require.Greater(t, one, 0, "steps for 1 µs %d, for 2 µs %d", one, two)
	require.GreaterOrEqual(t, two, 2*one-1, "steps for 1 µs %d, for 2 µs %d", one, two)
	require.LessOrEqual(t, two, 2*one+1, "steps for 1 µs %d, for 2 µs %d", one, two)
}

func TestIOMMUCostFollowsConfig(t *testing.T) {
	c := newIOMMUCost(IOMMUConfig{MapTime: time.Microsecond, UnmapTime: 2 * time.Microsecond})
	require.Equal(t, spinStepsFor(time.Microsecond), c.mapSteps, "%+v: the steps follow MapTime and UnmapTime", c)
	require.Equal(t, spinStepsFor(2*time.Microsecond), c.unmapSteps, "%+v: the steps follow MapTime and UnmapTime", c)
	c = newIOMMUCost(IOMMUConfig{})
	require.False(t, c.mapSteps != 0 || c.unmapSteps != 0, "zero config costs %+v", c)
}
