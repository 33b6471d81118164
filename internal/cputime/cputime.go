// Package cputime reads the process's CPU time, for benchmarks and
// example commands that report CPU time per item beside wall-clock rates.
package cputime
