// Package busdmatest wires busdma's DMA-misuse checker into tests, the way
// wireguard-go's tuntest provides fakes as a real package.
package busdmatest

import (
	"testing"

	"github.com/goiflib/goiflib/busdma"
)

// NewChecker returns a checker that fails t at cleanup if anything was
// reported, printing each report.
func NewChecker(t testing.TB) *busdma.Checker {
	t.Helper()
	c := busdma.NewChecker()
	t.Cleanup(func() {
		for _, r := range c.Reports() {
			t.Errorf("%s", r)
		}
	})
	return c
}

// NewSimDevice returns a device on a new SimSpace with a checker from
// NewChecker, closed at cleanup (a leak fails the test).
func NewSimDevice(t testing.TB, cfg busdma.SimConfig) (*busdma.SimSpace, *busdma.Device) {
	t.Helper()
	s, err := busdma.NewSimSpace(cfg)
	if err != nil {
		t.Fatalf("NewSimSpace: %v", err)
	}
	d, err := busdma.NewDevice(s, busdma.DeviceConfig{Name: t.Name(), Checker: NewChecker(t)})
	if err != nil {
		t.Fatalf("NewDevice: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Device.Close: %v", err)
		}
	})
	return s, d
}
