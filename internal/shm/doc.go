// Package shm is the rings' shared-memory operations, written once: the
// atomic words (load, store, compare-and-swap, add, swap), a mutex, a
// processor yield and a park/unpark pair, each under the name the rings
// use.
//
// In a normal build the atomic types and Mutex are aliases of sync/atomic's
// and sync's types, and Yield, Park and Unpark are one-line functions the
// compiler inlines (`go build -gcflags=-m ./internal/shm`): a ring's
// compiled code is the same instructions as with sync/atomic directly (for
// mpring, `go tool objdump` of its enqueue and drain functions before and
// after the switch differs only in one 1-byte NOP, an inline mark, before
// each runtime.Gosched call). docs/seeds.md, "Virtual CPUs", has the
// benchmark comparison.
//
// Built with the tag goiflib_vsched, every operation is first a
// scheduling point of the deterministic virtual scheduler in
// internal/vsched: while a simulation runs, exactly one of its virtual
// CPUs executes at a time and the scheduler decides, before each
// operation, which one goes next (and charges the operation's cost to that
// CPU's virtual clock). With no simulation running, the tagged build
// behaves exactly as the normal one, so the ordinary tests pass under the
// tag too.
//
// Only the operations that go through this package are scheduling points:
// plain memory (a ring's slots) is ordered by them, as it is by the atomics
// in a normal build.
package shm
