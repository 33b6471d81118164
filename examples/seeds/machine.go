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
	m.LoadAvg = loadAvg()
	return m
}

// loadAvg is the 1, 5 and 15 minute load average (Linux), or nil.
func loadAvg() []float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return nil
	}
	var out []float64
	f := strings.Fields(string(b))
	for _, x := range f[:min(3, len(f))] {
		if v, err := strconv.ParseFloat(x, 64); err == nil {
			out = append(out, v)
		}
	}
	return out
}
