package callsite

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
)

const self = "github.com/goiflib/goiflib/internal/callsite"

// report stands for the detecting package's code: calls inside it (here a
// closure in a function) above the Outside call.
func report() string { return func() string { return Outside(self) }() }

// lineNow is its caller's line.
func lineNow() int {
	_, _, line, _ := runtime.Caller(1)
	return line
}

func TestOutsideSkipsThePackage(t *testing.T) {
	// Every frame up to the test runner is in this package (the test is
	// too), so the site is the first frame outside it: package testing.
	site := report()
	assert.Contains(t, site, "/testing/testing.go:", "got %s", site)

	// Another package's path skips nothing here: the caller of Outside
	// is named, to the line.
	site, line := Outside("example.com/elsewhere"), lineNow()
	assert.Regexp(t, fmt.Sprintf(`/callsite_test\.go:%d$`, line), site)
}
