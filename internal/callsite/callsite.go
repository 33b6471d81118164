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
	prefix := pkg + "."
	var pcs [24]uintptr
	n := runtime.Callers(2, pcs[:])
	fr := runtime.CallersFrames(pcs[:n])
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
