package busdma

import "unsafe"

// addrOf is the address of b's first byte: the virtual address that
// pmap_kextract would translate. Go's heap does not move objects, and the
// space keeps its memory alive, so the address is stable.
func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// offsetIn returns b's offset in mem when b lies entirely inside mem.
func offsetIn(mem []byte, base uintptr, b []byte) (int, bool) {
	a := addrOf(b)
	if a < base {
		return 0, false
	}
	off := a - base
	if off > uintptr(len(mem)) || uintptr(len(b)) > uintptr(len(mem))-off {
		return 0, false
	}
	return int(off), true
}
