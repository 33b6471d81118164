//go:build !linux

package busdma

import "fmt"

// NewPagemapSpaceConfig fails off Linux: there is no /proc/self/pagemap.
func NewPagemapSpaceConfig(cfg PagemapConfig) (*PagemapSpace, error) {
	return nil, fmt.Errorf("%w: /proc/self/pagemap is Linux-only", ErrUnavailable)
}
