//go:build !purego

package prefetch

const puregoTag = false
