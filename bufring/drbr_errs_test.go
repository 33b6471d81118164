package bufring

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// TransmitBurstErrs says which of the caller's items Xmit dropped in the
// caller's own call, by index; deferred items' later drops are not the
// caller's; after Close the items not taken carry the close error; a short
// errs takes nothing.
func TestDRBRTransmitBurstErrs(t *testing.T) {
	errDrop := errors.New("dropped by xmit")
	credits := -1 // < 0: unlimited; else refuse once this many were sent
	sent := 0
	d, err := NewDRBRWith(DRBRConfig[uint64]{Size: 8, Xmit: func(v *uint64) error {
		if credits >= 0 && sent >= credits {
			return ErrRefused
		}
		sent++
		if *v%3 == 0 {
			return errDrop
		}
		return nil
	}})
	require.NoError(t, err)

	// Direct: the lock is free, every item goes through Xmit in this call.
	vs := []uint64{1, 3, 4, 6, 7}
	errs := make([]error, len(vs)+2)
	for i := range errs {
		errs[i] = errors.New("stale") // cleared for the items, kept beyond
	}
	n, err := d.TransmitBurstErrs(vs, errs)
	require.Equal(t, len(vs), n, "every item was taken")
	require.ErrorIs(t, err, errDrop, "the first drop")
	for i, v := range vs {
		if v%3 == 0 {
			require.ErrorIs(t, errs[i], errDrop, "item %d (%d)", i, v)
		} else {
			require.NoError(t, errs[i], "item %d (%d)", i, v)
		}
	}
	require.EqualError(t, errs[len(vs)], "stale", "errs beyond vs untouched")
	require.Equal(t, uint64(5), d.Stats().Direct)

	// A refusal in the middle: the refused item and those behind it are
	// deferred; their drops come later and are not reported here.
	credits = sent + 1 // one more send, then refuse
	vs = []uint64{10, 12, 13}
	n, err = d.TransmitBurstErrs(vs, errs)
	require.Equal(t, 3, n)
	require.NoError(t, err)
	require.Equal(t, []error{nil, nil, nil}, errs[:3], "10 sent; 12 refused (stalled), 13 behind it")
	require.True(t, d.Stalled())
	require.Equal(t, 2, d.Pending())
	credits = -1
	got, _, err := d.Restart()
	require.NoError(t, err)
	require.Equal(t, 2, got, "12 (dropped by Xmit, counted there) and 13")
	require.Zero(t, d.Pending())

	// Short errs: a ConfigError naming the argument, nothing taken.
	n, err = d.TransmitBurstErrs([]uint64{1, 2}, errs[:1])
	require.Zero(t, n)
	require.ErrorIs(t, err, ErrInvalid)
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "TransmitBurstErrs(errs)", ce.Field)
	require.Equal(t, 1, ce.Value)

	// Closed: every item is the caller's again, with the close error.
	errStop := errors.New("stopped")
	d.Close(errStop)
	n, err = d.TransmitBurstErrs([]uint64{1, 2}, errs)
	require.Zero(t, n)
	require.ErrorIs(t, err, errStop)
	require.ErrorIs(t, errs[0], ErrClosed)
	require.ErrorIs(t, errs[1], errStop)

	// Uninitialized.
	var z *DRBR[uint64]
	n, err = z.TransmitBurstErrs([]uint64{1}, errs)
	require.Zero(t, n)
	require.ErrorIs(t, err, ErrUninitialized)
	require.ErrorIs(t, errs[0], ErrUninitialized)
}

// TransmitBurstErrs allocates nothing.
func TestDRBRTransmitBurstErrsAllocs(t *testing.T) {
	d, err := NewDRBRWith(DRBRConfig[uint64]{Size: 8, Xmit: func(*uint64) error { return nil }})
	require.NoError(t, err)
	vs := []uint64{1, 2, 3, 4}
	errs := make([]error, 4)
	allocs := testing.AllocsPerRun(100, func() { _, _ = d.TransmitBurstErrs(vs, errs) })
	require.Zero(t, allocs)
}
