package busdma_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
)

// steadySpaces returns the spaces the hot path must not allocate in, with a
// tag for iflib's TX buffers and a 2 KiB-aligned packet buffer.
func steadySpaces(t testing.TB) []struct {
	name string
	s    busdma.Space
	low  busdma.BusAddr
} {
	sim, err := busdma.NewSimSpace(busdma.SimConfig{Size: 1 << 20})
	require.NoError(t, err)
	high, err := busdma.NewSimSpace(busdma.SimConfig{Size: 1 << 20, Layout: busdma.LayoutHigh})
	require.NoError(t, err)
	io, err := busdma.NewIOMMUSpace(busdma.IOMMUConfig{Sim: busdma.SimConfig{Size: 1 << 20}})
	require.NoError(t, err)
	return []struct {
		name string
		s    busdma.Space
		low  busdma.BusAddr
	}{{"sim", sim, 0}, {"bounce", high, busdma.MaxAddr32}, {"iommu", io, 0}}
}

func TestSteadyStateAllocatesNothing(t *testing.T) {
	for _, sp := range steadySpaces(t) {
		d, err := busdma.NewDevice(sp.s, busdma.DeviceConfig{Name: sp.name})
		require.NoError(t, err)
		tag := mustTag(t, d.Tag(), busdma.TagConfig{LowAddr: sp.low, MaxSize: 65536, NSegments: 32, MaxSegSize: 65536})
		m := mustMap(t, tag)
		buf := mustAlloc(t, sp.s, 2048, 2048)
		segs := make([]busdma.Segment, 0, 32)
		for _, n := range []int{64, 1500} {
			cycle := func() {
				var err error
				segs, err = m.Load(buf[:n], segs[:0])
				require.NoError(t, err)
				m.Sync(busdma.PreWrite)
				require.NoError(t, d.Read(segs[0].Addr, buf[n:n+1]))
				m.Sync(busdma.PostWrite)
				require.NoError(t, m.Unload())
			}
			cycle()
			a := testing.AllocsPerRun(100, cycle)
			assert.False(t, a != 0, "%s %d bytes: %v allocs per load/sync/unload", sp.name, n, a)
		}
		require.NoError(t, d.Close())
	}
}

// Maps loaded and unloaded by several goroutines while a device goroutine
// reads and writes the mappings it was handed: every packet arrives intact.
func TestConcurrentMapsAndDevice(t *testing.T) {
	for _, sp := range steadySpaces(t) {
		t.Run(sp.name, func(t *testing.T) {
			_ = concurrentRun(t, sp.s, sp.low, nil)
		})
		t.Run(sp.name+"-checker", func(t *testing.T) {
			_ = concurrentRun(t, sp.s, sp.low, busdmaNewCheckerFor(t))
		})
	}
}

func busdmaNewCheckerFor(t *testing.T) *busdma.Checker {
	c := busdma.NewChecker()
	t.Cleanup(func() { assert.Empty(t, c.Reports(), "busdma checker reports") })
	return c
}

type job struct {
	segs []busdma.Segment
	tx   bool
	seq  byte
	done chan struct{}
}

func concurrentRun(t *testing.T, s busdma.Space, low busdma.BusAddr, c *busdma.Checker) int {
	d, err := busdma.NewDevice(s, busdma.DeviceConfig{Name: "nic", Checker: c})
	require.NoError(t, err)
	tag := mustTag(t, d.Tag(), busdma.TagConfig{LowAddr: low, MaxSize: 4096, NSegments: 4, MaxSegSize: 4096})
	const workers = 4
	iters := 300
	if testing.Short() {
		iters = 50
	}
	jobs := make(chan *job)
	var devErr error
	var devWG sync.WaitGroup
	devWG.Add(1)
	go func() { // the device
		defer devWG.Done()
		tmp := make([]byte, 4096)
		for j := range jobs {
			off := 0
			for _, sg := range j.segs {
				p := tmp[off : off+sg.Len]
				var err error
				if j.tx {
					err = d.Read(sg.Addr, p)
					for i := range p {
						if p[i] != j.seq+byte(off+i) && err == nil {
							devErr = errTX
						}
					}
				} else {
					for i := range p {
						p[i] = j.seq ^ byte(off+i)
					}
					err = d.Write(sg.Addr, p)
				}
				if err != nil && devErr == nil {
					devErr = err
				}
				off += sg.Len
			}
			close(j.done)
		}
	}()
	var wg sync.WaitGroup
	count := make([]int, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, err := tag.CreateMap()
			if !assert.NoError(t, err) {
				return
			}
			buf, err := s.Alloc(1500, 64)
			if !assert.NoError(t, err) {
				return
			}
			var segs []busdma.Segment
			for i := range iters {
				seq := byte(w*31 + i)
				tx := i%2 == 0
				segs, err = m.Load(buf, segs[:0])
				if !assert.NoError(t, err) {
					return
				}
				if tx {
					for k := range buf {
						buf[k] = seq + byte(k)
					}
					m.Sync(busdma.PreWrite)
				} else {
					m.Sync(busdma.PreRead)
				}
				j := &job{segs: segs, tx: tx, seq: seq, done: make(chan struct{})}
				jobs <- j
				<-j.done
				if tx {
					m.Sync(busdma.PostWrite)
				} else {
					m.Sync(busdma.PostRead)
					for k := range buf {
						if !assert.Equal(t, seq^byte(k), buf[k], "worker %d packet %d byte %d corrupted", w, i, k) {
							break
						}
					}
				}
				if !assert.NoError(t, m.Unload()) {
					return
				}
				count[w]++
			}
		}()
	}
	wg.Wait()
	close(jobs)
	devWG.Wait()
	require.NoError(t, devErr)
	total := 0
	for w, n := range count {
		assert.Equal(t, iters, n, "worker %d did %d of %d", w, n, iters)
		total += n
	}
	require.NoError(t, d.Close())
	return total
}

var errTX = errorString("device read wrong TX data")

type errorString string

func (e errorString) Error() string { return string(e) }
