// Package callsite names where a misuse happened: the first caller outside
// the package that detected it, for busdma's checker reports and iflib's
// use-after-free reports.
package callsite

import (
	"fmt"
	"runtime"
	"strings"
)

// Outside returns "file:line" of the innermost frame of the calling
// goroutine's stack whose function is not in the package with import path
// pkg (its methods and closures included), or "?" when every frame is.
func Outside(pkg string) string {
	var pcs [24]uintptr
	n := runtime.Callers(2, pcs[:])
	return OutsideOf(pkg, pcs[:n])
}

// OutsideOf is Outside for a stack recorded earlier with runtime.Callers
// (pcs, ending at its first zero): "file:line" of its innermost frame
// outside pkg, or "?" when there is none.
func OutsideOf(pkg string, pcs []uintptr) string {
	prefix := pkg + "."
	for i, pc := range pcs {
		if pc == 0 {
			pcs = pcs[:i]
			break
		}
	}
	if len(pcs) == 0 {
		return "?"
	}
	fr := runtime.CallersFrames(pcs)
	for {
		f, more := fr.Next()
		if !strings.HasPrefix(f.Function, prefix) {
			return fmt.Sprintf("%s:%d", f.File, f.Line)
		}
		if !more {
			return "?"
		}
	}
}
