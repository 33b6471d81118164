// Package errs is the one error class for an invalid argument or
// configuration (EINVAL) across goiflib's packages: one sentinel,
// [ErrInvalid], and one type, [*ConfigError]. Each library package
// re-exports both (iflib.ErrInvalid, busdma.ErrInvalid, ... are the same
// value; iflib.ConfigError, busdma.ConfigError, ... are aliases of this
// type), so that errors.Is(err, iflib.ErrInvalid) and
// errors.As(err, &cfgErr) hold for a bad argument refused by any of them.
//
// A package builds a *ConfigError at the refusal, naming itself, the field
// or argument, the value and the reason. A hot path returns a
// package-level *ConfigError built once (Value nil when it differs per
// call), never a fresh one.
package errs

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalid is EINVAL: an invalid argument or configuration value.
// Every *ConfigError matches it with errors.Is, and so does every
// package sentinel made by [Invalid].
var ErrInvalid = errors.New("invalid argument or configuration (EINVAL)")

// ConfigError is an argument or configuration value a package refused.
// It matches [ErrInvalid] with errors.Is, and Err (a package-specific
// sentinel saying which kind of refusal, or the cause from another
// package) through Unwrap.
type ConfigError struct {
	Pkg    string // the package that refused it: "iflib", "busdma", "cpumap", ...
	Field  string // the field or argument, Go-named: "Config.RxBudget", "TagConfig.Alignment", "New(size)"
	Value  any    // the value refused (nil: not recorded, as in a hot path's prebuilt error)
	Reason string // why, or what would be accepted
	Err    error  // a more specific sentinel or the cause, if any (errors.Unwrap)
}

// Error reads "<pkg>: invalid <field> = <value>: <reason>[: <cause>]",
// leaving out "= <value>" when Value is nil, and the cause's own
// "<pkg>: " prefix when it is the same package's.
func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString(e.Pkg)
	b.WriteString(": invalid ")
	b.WriteString(e.Field)
	if e.Value != nil {
		fmt.Fprintf(&b, " = %v", e.Value)
	}
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(strings.TrimPrefix(e.Err.Error(), e.Pkg+": "))
	}
	return b.String()
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalid }

// Unwrap returns Err.
func (e *ConfigError) Unwrap() error { return e.Err }

// Invalid returns a package sentinel for one kind of invalid argument
// (cpumap.ErrQueueCount, afxdp.ErrQueueID): a distinct value with its own
// message that also matches [ErrInvalid] with errors.Is.
func Invalid(msg string) error { return &invalid{msg} }

type invalid struct{ msg string }

func (e *invalid) Error() string        { return e.msg }
func (e *invalid) Is(target error) bool { return target == ErrInvalid }
