package busdma

import "fmt"

// SegmentError is Tag.OneSegment's answer when chunks of a size cannot be
// promised to load as one segment. It matches [ErrTooBig] (the EFBIG a load
// would return) with errors.Is.
type SegmentError struct {
	Tag    string
	Space  string
	Size   int
	Align  int
	Reason string
}

func (e *SegmentError) Error() string {
	return fmt.Sprintf("busdma: tag %s on %s: a %d-byte chunk (align %d) may not load as one segment: %s",
		e.Tag, e.Space, e.Size, e.Align, e.Reason)
}

// Is makes errors.Is(err, ErrTooBig) true.
func (e *SegmentError) Is(target error) bool { return target == ErrTooBig }

// OneSegment reports whether every chunk that the tag's space hands out with
// AllocChunks(size, n, align) loads through t as exactly one segment: nil if
// so, else a *SegmentError (ErrTooBig) saying why not, or an *AllocError
// (ErrInvalid) naming a size or align that AllocChunks itself refuses. iflib can ask it at attach
// time for its RX free-list tags (one segment per cluster when
// isc_rx_nsegments is 1) and refuse an impossible configuration instead of
// failing every refill with EFBIG.
//
// The answer depends on the tag (maxsize, maxsegsz, boundary, lowaddr,
// alignment) and on the space: a chunk larger than a page that may bounce
// (memory of the space inside the tag's exclusion window, or an alignment the
// chunk's pages do not meet) takes one bounce page, and so one segment, per
// page. A load can still fail for lack of bounce pages or IOVA space
// (ErrNoMem); that is a shortage, not a configuration error.
func (t *Tag) OneSegment(size, align int) error {
	a, ok := validAlign(align)
	if size <= 0 || !ok {
		return &AllocError{Op: "OneSegment", Space: t.dev.space.Name(), Size: size, Align: align, Err: ErrInvalid}
	}
	fail := func(format string, args ...any) error {
		return &SegmentError{Tag: t.name, Space: t.dev.space.Name(), Size: size, Align: align, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case size > t.maxsize:
		return fail("larger than maxsize %d", t.maxsize)
	case size > t.maxsegsz:
		return fail("larger than maxsegsz %d", t.maxsegsz)
	}
	if why := t.dev.be.oneSegment(t, size, a); why != "" {
		return fail("%s", why)
	}
	return nil
}

// chunkAlign is the bus alignment AllocChunks gives a chunk's first byte.
func chunkAlign(size, align int) uint64 {
	if size > PageSize {
		return uint64(max(align, PageSize))
	}
	return uint64(align)
}

// boundaryWhy says whether a chunk of size bytes whose bus address is a
// multiple of calign can cross a multiple of boundary b.
func boundaryWhy(b uint64, size int, calign uint64) string {
	if b == 0 || (calign >= b && uint64(size) <= b) {
		return ""
	}
	if size <= PageSize && b >= PageSize {
		return "" // the chunk lies inside one page, which no boundary splits
	}
	return fmt.Sprintf("it can cross a boundary multiple of %#x", b)
}

func (b *physBackend) oneSegment(t *Tag, size, align int) string {
	ca := chunkAlign(size, align)
	if why := boundaryWhy(t.boundary, size, ca); why != "" {
		return why
	}
	if !t.couldBounce {
		return ""
	}
	misaligned := t.alignment > ca || (size > PageSize && t.alignment > PageSize)
	inWindow := false
	if t.lowaddr < b.pm.max && t.highaddr > t.lowaddr {
		for p := b.allocZ.lo >> pageShift; p < b.allocZ.hi>>pageShift; p++ {
			if pa := b.pm.phys[p]; pa > t.lowaddr && pa <= t.highaddr {
				inWindow = true
				break
			}
		}
	}
	if !misaligned && !inWindow {
		return ""
	}
	if b.bp == nil {
		return fmt.Sprintf("chunks may need bounce pages (lowaddr %#x, alignment %d), which this space does not have",
			uint64(t.lowaddr), t.alignment)
	}
	if size > PageSize {
		return fmt.Sprintf("chunks may bounce (lowaddr %#x, alignment %d) and a bounced chunk takes one segment per page",
			uint64(t.lowaddr), t.alignment)
	}
	return ""
}

func (b *iommuBackend) oneSegment(t *Tag, size, align int) string {
	if t.boundary == 0 {
		return ""
	}
	if size > PageSize {
		// The IOVA run of a page-aligned chunk avoids a boundary multiple
		// when it fits between two (allocIOVA).
		if run := uint64(size+PageSize-1) &^ pageMask; run > t.boundary {
			return fmt.Sprintf("its %d-page IOVA run is larger than the boundary %#x", run/PageSize, t.boundary)
		}
		return ""
	}
	return boundaryWhy(t.boundary, size, chunkAlign(size, align))
}
