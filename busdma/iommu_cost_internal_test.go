package busdma

import (
	"testing"
	"time"
)

func TestSpinStepsScaleWithTime(t *testing.T) {
	if spinStepsFor(0) != 0 || spinStepsFor(-time.Second) != 0 {
		t.Fatal("no time, no steps")
	}
	one, two := spinStepsFor(time.Microsecond), spinStepsFor(2*time.Microsecond)
	if one <= 0 || two < 2*one-1 || two > 2*one+1 {
		t.Fatalf("steps for 1 µs %d, for 2 µs %d", one, two)
	}
}

func TestIOMMUCostFollowsConfig(t *testing.T) {
	c := newIOMMUCost(IOMMUConfig{MapTime: time.Microsecond, UnmapTime: 2 * time.Microsecond})
	if c.mapSteps != spinStepsFor(time.Microsecond) || c.unmapSteps != spinStepsFor(2*time.Microsecond) {
		t.Fatalf("%+v: the steps follow MapTime and UnmapTime", c)
	}
	if c := newIOMMUCost(IOMMUConfig{}); c.mapSteps != 0 || c.unmapSteps != 0 {
		t.Fatalf("zero config costs %+v", c)
	}
}
