//go:build purego

package prefetch

const puregoTag = true
