package main

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// thisMachine describes the machine the run is on.
func thisMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
		_ = f.Close()
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		for _, f := range strings.Fields(string(b))[:min(3, len(strings.Fields(string(b))))] {
			if v, err := strconv.ParseFloat(f, 64); err == nil {
				m.LoadAvg = append(m.LoadAvg, v)
			}
		}
	}
	return m
}
