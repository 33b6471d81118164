package main

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/examples/seedbench"
)

// Chart file names written by -svg.
const (
	ChartFanIn     = "fanin.svg"     // Gb/s by senders per TX mode, with FreeBSD's
	ChartReuse     = "reuse.svg"     // D17901: cpu-ns/pkt, reuse on/off, plain and IOMMU
	ChartBatching  = "batching.svg"  // D27755: cpu-ns/pkt by batch size
	ChartPrefetch  = "prefetch.svg"  // D53674: cpu-ns/pkt, prefetch on/off
	ChartPlacement = "placement.svg" // D24094: Mpps by placement
)

// writeCharts draws every chart the report has data for into dir as SVG
// and returns the files written.
func writeCharts(dir string, rep *Report) ([]string, error) { return renderCharts(dir, rep, ".svg") }

// renderCharts draws the charts in the format of ext (".svg" or ".png").
func renderCharts(dir string, rep *Report, ext string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	var errs []error
	save := func(name string, draw func(path string) error) {
		path := filepath.Join(dir, strings.TrimSuffix(name, ".svg")+ext)
		if err := draw(path); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			return
		}
		files = append(files, path)
	}
	for i := range rep.Reviews {
		rev := &rep.Reviews[i]
		if len(rev.Points) == 0 {
			continue
		}
		switch rev.ID {
		case SecDRBR:
			save(ChartFanIn, func(p string) error { return fanInChart(p, rev, rep) })
		case SecD17901:
			save(ChartReuse, func(p string) error {
				plain, iommu := "plain simulated space", fmt.Sprintf("strict IOMMU (%v per unmap)", busdma.StrictUnmapTime)
				prefix := map[string]string{plain: "plain/", iommu: "iommu/"}
				return categoryChart(p, rev, "D17901: ifsd_ba reuse on and off, 64-byte forwarding, GOMAXPROCS=1", MCPU,
					[]string{plain, iommu}, []string{"reuse=on", "reuse=off"},
					func(cat, ser string) string { return prefix[cat] + ser },
					func(string) int { return 0 })
			})
		case SecD24094:
			save(ChartPlacement, func(p string) error {
				return categoryChart(p, rev, fmt.Sprintf("D24094: forwarding by placement of B's TX task, GOMAXPROCS=%d", rev.Points[0].GOMAXPROCS), MMpps,
					[]string{"tx-on-rx-cpu", "tx-on-other-cpu", "unpinned"}, []string{"this run"},
					func(cat, _ string) string { return cat }, func(string) int { return 0 })
			})
		case SecD53674:
			save(ChartPrefetch, func(p string) error {
				return categoryChart(p, rev, "D53674: transmit prefetch on and off, 1514-byte frames, GOMAXPROCS=1", MCPU,
					[]string{"1 sender", "3 senders"}, []string{"prefetch=off", "prefetch=on"},
					func(_, ser string) string { return ser },
					func(cat string) int { n, _ := strconv.Atoi(cat[:1]); return n })
			})
		case SecD27755:
			save(ChartBatching, func(p string) error { return batchChart(p, rev) })
		}
	}
	return files, errors.Join(errs...)
}

// addSeries draws one series: a line through the medians, a marker at
// each, and a min..max error bar.
func addSeries(p *plot.Plot, name string, i int, xs []float64, st []Stat, dashed bool) error {
	pts := make(plotter.XYs, 0, len(xs))
	var errs plotter.YErrors
	for j, x := range xs {
		if math.IsNaN(st[j].Median) {
			continue
		}
		pts = append(pts, plotter.XY{X: x, Y: st[j].Median})
		errs = append(errs, struct{ Low, High float64 }{st[j].Median - st[j].Min, st[j].Max - st[j].Median})
	}
	if len(pts) == 0 {
		return nil
	}
	line, points, err := plotter.NewLinePoints(pts)
	if err != nil {
		return err
	}
	c := plotutil.Color(i)
	line.Color, points.Color = c, c
	points.Shape = plotutil.Shape(i)
	if dashed {
		line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	p.Add(line, points)
	if len(st[0].Samples) > 1 {
		eb, err := plotter.NewYErrorBars(struct {
			plotter.XYs
			plotter.YErrors
		}{pts, errs})
		if err != nil {
			return err
		}
		eb.Color = c
		p.Add(eb)
	}
	p.Legend.Add(name, line, points)
	return nil
}

func log2Ticks(xs []int) plot.ConstantTicks {
	var t plot.ConstantTicks
	for _, x := range xs {
		t = append(t, plot.Tick{Value: float64(x), Label: strconv.Itoa(x)})
	}
	return t
}

// fanInChart: one panel per transmit mode, Gb/s against senders, this
// run at each GOMAXPROCS (median and min..max) and FreeBSD's figures
// (dashed) as a second series.
func fanInChart(path string, rev *Review, rep *Report) error {
	modes := seedbench.TxModes
	row := make([]*plot.Plot, len(modes))
	for i, m := range modes {
		p := plot.New()
		p.Title.Text = modeName(m)
		p.X.Label.Text = "senders on one TX queue"
		p.Y.Label.Text = "Gb/s"
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = log2Ticks(seedbench.FanIns)
		p.Y.Min = 0
		p.Legend.Top = true
		p.Legend.TextStyle.Font.Size = vg.Points(8)
		for j, g := range rep.Settings.Procs {
			var xs []float64
			var st []Stat
			for _, n := range rep.Settings.Senders {
				if pt, ok := rev.find(m.String(), n, 0, g); ok {
					xs = append(xs, float64(n))
					st = append(st, pt.Metrics[MGbps])
				}
			}
			if err := addSeries(p, fmt.Sprintf("this run, GOMAXPROCS=%d", g), j, xs, st, false); err != nil {
				return err
			}
		}
		var xs []float64
		var st []Stat
		for k, n := range seedbench.FanIns {
			v := seedbench.FreeBSDFanInGbps[m.String()][k]
			xs = append(xs, float64(n))
			st = append(st, Stat{Samples: []float64{v}, Median: v, Min: v, Max: v})
		}
		if err := addSeries(p, "FreeBSD, 96-core Turin, 400G", len(rep.Settings.Procs), xs, st, true); err != nil {
			return err
		}
		row[i] = p
	}
	// One y range for all panels, so heights compare across modes.
	ymax := 0.0
	for _, p := range row {
		ymax = max(ymax, p.Y.Max)
	}
	for _, p := range row {
		p.Y.Max = ymax * 1.25
	}
	return savePanels(path, [][]*plot.Plot{row}, 27*vg.Centimeter, 10*vg.Centimeter,
		fmt.Sprintf("simple_tx with drbr deferral: one TX queue, %d-byte frames (median, min..max of %d rounds)", seedbench.FanInFrameLen, rep.Settings.Rounds))
}

// categoryChart: named categories on x, one series per variant, offset
// so the bars do not overlap; senders(cat) > 0 selects points by senders.
func categoryChart(path string, rev *Review, title, metric string, cats, sers []string, variant func(cat, ser string) string, senders func(cat string) int) error {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = metric
	p.Y.Min = 0
	p.Legend.Top = true
	var ticks plot.ConstantTicks
	for i, c := range cats {
		ticks = append(ticks, plot.Tick{Value: float64(i), Label: c})
	}
	p.X.Tick.Marker = ticks
	p.X.Min, p.X.Max = -0.5, float64(len(cats))-0.5
	for j, s := range sers {
		off := 0.0
		if len(sers) > 1 {
			off = (float64(j)/float64(len(sers)-1) - 0.5) * 0.3
		}
		var xs []float64
		var st []Stat
		for i, c := range cats {
			if pt, ok := rev.find(variant(c, s), senders(c), 0, rev.Points[0].GOMAXPROCS); ok {
				xs = append(xs, float64(i)+off)
				st = append(st, pt.Metrics[metric])
			}
		}
		if err := addScatter(p, s, j, xs, st); err != nil {
			return err
		}
	}
	p.Y.Max *= 1.2
	return p.Save(16*vg.Centimeter, 10*vg.Centimeter, path)
}

// addScatter draws markers with min..max error bars, without a line.
func addScatter(p *plot.Plot, name string, i int, xs []float64, st []Stat) error {
	pts := make(plotter.XYs, len(xs))
	errs := make(plotter.YErrors, len(xs))
	for j := range xs {
		pts[j] = plotter.XY{X: xs[j], Y: st[j].Median}
		errs[j].Low, errs[j].High = st[j].Median-st[j].Min, st[j].Max-st[j].Median
	}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return err
	}
	sc.Color, sc.Shape = plotutil.Color(i), plotutil.Shape(i)
	sc.Radius = vg.Points(4)
	eb, err := plotter.NewYErrorBars(struct {
		plotter.XYs
		plotter.YErrors
	}{pts, errs})
	if err != nil {
		return err
	}
	eb.Color = plotutil.Color(i)
	p.Add(sc, eb)
	p.Legend.Add(name, sc)
	return nil
}

// batchChart: cpu-ns/pkt against the batch size, batched and per-packet.
func batchChart(path string, rev *Review) error {
	p := plot.New()
	p.Title.Text = "D27755: batched and per-packet input, 64-byte forwarding, GOMAXPROCS=1"
	p.X.Label.Text = "rx budget (packets per RX pass)"
	p.Y.Label.Text = MCPU
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = log2Ticks(batchSizes)
	p.Y.Min = 0
	p.Legend.Top = true
	for i, v := range []string{"batched", "per-packet"} {
		var xs []float64
		var st []Stat
		for _, b := range batchSizes {
			if pt, ok := rev.find(v, 0, b, 1); ok {
				xs = append(xs, float64(b))
				st = append(st, pt.Metrics[MCPU])
			}
		}
		if err := addSeries(p, v, i, xs, st, false); err != nil {
			return err
		}
	}
	p.Y.Max *= 1.2
	return p.Save(16*vg.Centimeter, 10*vg.Centimeter, path)
}

// savePanels lays plots out in a grid under a title and writes an SVG.
func savePanels(path string, plots [][]*plot.Plot, w, h vg.Length, title string) error {
	var img interface {
		vg.CanvasSizer
		io.WriterTo
	}
	if strings.HasSuffix(path, ".png") {
		img = vgimg.PngCanvas{Canvas: vgimg.New(w, h)}
	} else {
		img = vgsvg.New(w, h)
	}
	dc := draw.New(img)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	top := vg.Points(18)
	ts := draw.TextStyle{Color: color.Black, Font: font.From(plot.DefaultFont, vg.Points(11)), XAlign: draw.XCenter, YAlign: draw.YTop, Handler: plot.DefaultTextHandler}
	dc.FillText(ts, vg.Point{X: w / 2, Y: h - vg.Points(4)}, title)
	body := draw.Crop(dc, 0, 0, 0, -top)
	tiles := draw.Tiles{Rows: len(plots), Cols: len(plots[0]), PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 2,
		PadTop: vg.Millimeter, PadBottom: vg.Millimeter, PadLeft: vg.Millimeter, PadRight: vg.Millimeter}
	canvases := plot.Align(plots, tiles, body)
	for i := range plots {
		for j := range plots[i] {
			if plots[i][j] != nil {
				plots[i][j].Draw(canvases[i][j])
			}
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := img.WriteTo(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
