// Prelude of README.md's netstack snippet (examples/netstack/ifliblink).
package doc

import (
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/goiflib/goiflib/examples/netstack/ifliblink"
	"github.com/goiflib/goiflib/iflib"
)

var (
	zone *iflib.Zone    // the TX zone, on the device's address space
	ic   *iflib.Context // the driver's context (after Register)
	s    *stack.Stack   // a gVisor stack
)

// ifliblink is used by the snippet; this keeps the import used when a
// snippet does not name it.
var _ ifliblink.Options
