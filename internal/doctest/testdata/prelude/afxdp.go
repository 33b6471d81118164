// Prelude of README.md's AF_XDP snippets.
package doc

import (
	"github.com/goiflib/goiflib/examples/afxdp"
	"github.com/goiflib/goiflib/iflib"
)

var (
	frame []byte        // a frame to send
	u     *afxdp.UMEM   // the UMEM of the first snippet
	out   *afxdp.Driver // the driver that forwards (another Attach on u)
)

// iflib is used by the snippets; this keeps the import used when a
// snippet does not name it.
var _ iflib.Attachment
