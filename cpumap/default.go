package cpumap

import "sync"

var defaultAlloc struct {
	once sync.Once
	a    *Allocator
	err  error
}

// DefaultAllocator returns the process-wide Allocator over this machine's
// topology (Discover), built on first use with the default options: the
// counterpart of FreeBSD's global cpu_offsets list, shared by every device
// (and worker pool) of the process so that each continues where the
// previous one stopped. The error is Discover's, returned on every call.
func DefaultAllocator() (*Allocator, error) {
	defaultAlloc.once.Do(func() {
		t, err := Discover()
		if err != nil {
			defaultAlloc.err = err
			return
		}
		defaultAlloc.a = NewAllocator(t, AllocatorOptions{})
	})
	return defaultAlloc.a, defaultAlloc.err
}
