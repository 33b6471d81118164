package main

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/image/font/sfnt"
	"golang.org/x/image/math/fixed"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/goiflib/goiflib/examples/seedbench"
)

// Chart file names written by -svg.
const (
	ChartFanIn     = "fanin.svg"     // drbr: each mode's Gb/s over another's per fan-in, with FreeBSD's ratios
	ChartReuse     = "reuse.svg"     // D17901
	ChartPlacement = "placement.svg" // D24094
	ChartPrefetch  = "prefetch.svg"  // D53674
	ChartBatching  = "batching.svg"  // D27755
)

// Every chart but the fan-in has two panels: on the left what was
// measured (each round a dot, the median a marker, min..max a bar), on
// the right what the verdict uses (each comparison's per-round
// advantages, their median, the interval of the median, FreeBSD's range
// and the bound, against 1). Text is drawn as glyph outlines from the
// font the layout was computed with, so a viewer without that font (or
// with another one of the same name) draws the labels where the layout
// put them. Legends sit beside the panels, off the data.

// writeCharts draws every chart the report has data for into dir as SVG
// and returns the files written.
func writeCharts(dir string, rep *Report) ([]string, error) {
	return renderCharts(dir, rep, ".svg", true)
}

// renderCharts draws the charts in the format of ext (".svg" or ".png"),
// with or without their text (the test renders both to find where text
// lands).
func renderCharts(dir string, rep *Report, ext string, withText bool) ([]string, error) {
	files, _, err := drawCharts(dir, rep, ext, withText)
	return files, err
}

// drawCharts is renderCharts that also returns, per file, its layout.
func drawCharts(dir string, rep *Report, ext string, withText bool) ([]string, []layout, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	var files []string
	var areas []layout
	var errs []error
	for i := range rep.Reviews {
		rev := &rep.Reviews[i]
		if len(rev.Points) == 0 {
			continue
		}
		var fig *figure
		var err error
		switch rev.ID {
		case SecDRBR:
			fig, err = fanInFigure(rev, rep)
		case SecD17901:
			fig, err = reviewFigure(rev, "D17901: ifsd_ba reuse on and off, 64-byte forwarding, GOMAXPROCS=1", MCPU, nil)
		case SecD24094:
			fig, err = reviewFigure(rev, fmt.Sprintf("D24094: two queue pairs, TX queue on its RX queue's CPU or the other, GOMAXPROCS=%d", rev.Points[0].GOMAXPROCS), MMpps, nil)
		case SecD53674:
			fig, err = reviewFigure(rev, "D53674: transmit prefetch off and on, 1514-byte frames, GOMAXPROCS=1", MCPU, nil)
		case SecD27755:
			fig, err = reviewFigure(rev, "D27755: batched and per-packet input, 64-byte forwarding, GOMAXPROCS=1", MCPU, nil)
		default:
			continue
		}
		name := map[string]string{SecDRBR: ChartFanIn, SecD17901: ChartReuse, SecD24094: ChartPlacement, SecD53674: ChartPrefetch, SecD27755: ChartBatching}[rev.ID]
		path := filepath.Join(dir, strings.TrimSuffix(name, ".svg")+ext)
		var data layout
		if err == nil {
			data, err = fig.save(path, withText)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		files = append(files, path)
		areas = append(areas, data)
	}
	return files, areas, errors.Join(errs...)
}

// ---- layout ---------------------------------------------------------------

// figure is a row of panels under a title, with one legend to their right.
type figure struct {
	title  string
	panels []*plot.Plot
	legend plot.Legend
	w, h   vg.Length
}

const titleSize = 11

func newLegend() plot.Legend {
	l := plot.NewLegend()
	l.Top, l.Left = true, true
	l.TextStyle.Font.Size = vg.Points(9)
	l.ThumbnailWidth = vg.Points(18)
	l.Padding = vg.Points(3)
	return l
}

// legendWidth is how wide the legend is drawn.
func legendWidth(l *plot.Legend) vg.Length {
	// The widest entry, its thumbnail and the gap gonum's legend leaves.
	return l.Rectangle(draw.New(vgimg.New(vg.Points(2000), vg.Points(2000)))).Size().X + vg.Points(12)
}

// save draws the figure to path, SVG or PNG for a .png path, and returns
// the data area of each panel and where its text went.
func (f *figure) save(path string, withText bool) (layout, error) {
	var img interface {
		vg.CanvasSizer
		io.WriterTo
	}
	if strings.HasSuffix(path, ".png") {
		img = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(f.w, f.h), vgimg.UseDPI(144))}
	} else {
		img = vgsvg.New(f.w, f.h)
	}
	canvas := &outlineCanvas{CanvasSizer: img, text: withText, m: identity}
	dc := draw.New(canvas)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	margin := vg.Points(6)
	lines := strings.Split(f.title, "\n")
	lineHeight := vg.Points(titleSize * 1.4)
	top := lineHeight*vg.Length(len(lines)) + 2*margin
	ts := draw.TextStyle{Color: color.Black, Font: font.From(plot.DefaultFont, vg.Points(titleSize)), XAlign: draw.XCenter, YAlign: draw.YTop,
		Handler: plot.DefaultTextHandler}
	for i, l := range lines {
		if i > 0 {
			ts.Font.Size = vg.Points(titleSize - 1)
		}
		dc.FillText(ts, vg.Point{X: f.w / 2, Y: f.h - margin - lineHeight*vg.Length(i)}, l)
	}
	lw := legendWidth(&f.legend)
	body := draw.Crop(dc, margin, -(lw + margin), margin, -top)
	leg := draw.Crop(dc, f.w-lw-margin, -margin, margin, -top)
	f.legend.Draw(leg)
	tiles := draw.Tiles{Rows: 1, Cols: len(f.panels), PadX: vg.Points(18), PadRight: vg.Points(8)}
	canvases := plot.Align([][]*plot.Plot{f.panels}, tiles, body)
	lay := layout{w: f.w, h: f.h}
	for j, p := range f.panels {
		p.Draw(canvases[0][j])
		lay.data = append(lay.data, p.DataCanvas(canvases[0][j]).Rectangle)
	}
	lay.text = canvas.boxes
	w, err := os.Create(path)
	if err != nil {
		return lay, err
	}
	if _, err := img.WriteTo(w); err != nil {
		_ = w.Close()
		return lay, err
	}
	return lay, w.Close()
}

// layout is where a figure put things, in points from its lower left.
type layout struct {
	w, h vg.Length
	data []vg.Rectangle // each panel's data area
	text []textBox
}

// outlineCanvas draws text as the outlines of its glyphs (or not at all,
// without text): an SVG viewer then needs no font, and the text is
// exactly as wide as the layout measured it. It follows the canvas's
// transforms to record where each string lands (boxes), for the test.
type outlineCanvas struct {
	vg.CanvasSizer
	text  bool
	buf   sfnt.Buffer
	m     affine
	stack []affine
	boxes []textBox
}

// textBox is where a string was drawn, in points from the lower left.
type textBox struct {
	text string
	box  vg.Rectangle
}

// affine maps (x, y) to (a·x + c·y + e, b·x + d·y + f).
type affine struct{ a, b, c, d, e, f float64 }

var identity = affine{a: 1, d: 1}

func (m affine) mul(n affine) affine { // m then n in local coordinates: m ∘ n
	return affine{a: m.a*n.a + m.c*n.b, b: m.b*n.a + m.d*n.b, c: m.a*n.c + m.c*n.d, d: m.b*n.c + m.d*n.d,
		e: m.a*n.e + m.c*n.f + m.e, f: m.b*n.e + m.d*n.f + m.f}
}

func (m affine) apply(p vg.Point) vg.Point {
	x, y := p.X.Points(), p.Y.Points()
	return vg.Point{X: vg.Length(m.a*x + m.c*y + m.e), Y: vg.Length(m.b*x + m.d*y + m.f)}
}

func (c *outlineCanvas) Translate(pt vg.Point) {
	c.m = c.m.mul(affine{a: 1, d: 1, e: pt.X.Points(), f: pt.Y.Points()})
	c.CanvasSizer.Translate(pt)
}

func (c *outlineCanvas) Rotate(rad float64) {
	s, co := math.Sincos(rad)
	c.m = c.m.mul(affine{a: co, b: s, c: -s, d: co})
	c.CanvasSizer.Rotate(rad)
}

func (c *outlineCanvas) Scale(x, y float64) {
	c.m = c.m.mul(affine{a: x, d: y})
	c.CanvasSizer.Scale(x, y)
}

func (c *outlineCanvas) Push() {
	c.stack = append(c.stack, c.m)
	c.CanvasSizer.Push()
}

func (c *outlineCanvas) Pop() {
	if n := len(c.stack); n > 0 {
		c.m, c.stack = c.stack[n-1], c.stack[:n-1]
	}
	c.CanvasSizer.Pop()
}

// FillString draws str with its baseline starting at pt, glyph by glyph,
// advancing and kerning as font.Face.Width measures.
func (c *outlineCanvas) FillString(f font.Face, pt vg.Point, str string) {
	if !c.text {
		return
	}
	upem := fixed.Int26_6(f.Face.UnitsPerEm())
	scale := float64(f.Font.Size.Points()) / float64(upem)
	var path vg.Path
	ink := vg.Rectangle{Min: vg.Point{X: vg.Length(math.Inf(1)), Y: vg.Length(math.Inf(1))}, Max: vg.Point{X: vg.Length(math.Inf(-1)), Y: vg.Length(math.Inf(-1))}}
	at := func(p fixed.Point26_6, x float64) vg.Point {
		q := vg.Point{X: pt.X + vg.Length((x+float64(p.X))*scale), Y: pt.Y - vg.Length(float64(p.Y)*scale)}
		ink.Min.X, ink.Min.Y = min(ink.Min.X, q.X), min(ink.Min.Y, q.Y)
		ink.Max.X, ink.Max.Y = max(ink.Max.X, q.X), max(ink.Max.Y, q.Y)
		return q
	}
	x := 0.0
	var prev sfnt.GlyphIndex
	for i, r := range str {
		idx, err := f.Face.GlyphIndex(&c.buf, r)
		if err != nil {
			continue
		}
		if i > 0 {
			if k, err := f.Face.Kern(&c.buf, prev, idx, upem, 0); err == nil {
				x += float64(k)
			}
		}
		segs, err := f.Face.LoadGlyph(&c.buf, idx, upem, nil)
		if err == nil {
			for _, s := range segs {
				switch s.Op {
				case sfnt.SegmentOpMoveTo:
					if len(path) > 0 {
						path.Close()
					}
					path.Move(at(s.Args[0], x))
				case sfnt.SegmentOpLineTo:
					path.Line(at(s.Args[0], x))
				case sfnt.SegmentOpQuadTo:
					path.QuadTo(at(s.Args[0], x), at(s.Args[1], x))
				case sfnt.SegmentOpCubeTo:
					path.CubeTo(at(s.Args[0], x), at(s.Args[1], x), at(s.Args[2], x))
				}
			}
			if len(path) > 0 {
				path.Close()
			}
		}
		if adv, err := f.Face.GlyphAdvance(&c.buf, idx, upem, 0); err == nil {
			x += float64(adv)
		}
		prev = idx
	}
	if len(path) == 0 {
		return
	}
	c.CanvasSizer.Fill(path)
	// The ink's bounding box (control points included), in canvas
	// coordinates.
	corners := []vg.Point{ink.Min, {X: ink.Max.X, Y: ink.Min.Y}, {X: ink.Min.X, Y: ink.Max.Y}, ink.Max}
	box := vg.Rectangle{Min: vg.Point{X: vg.Length(math.Inf(1)), Y: vg.Length(math.Inf(1))}, Max: vg.Point{X: vg.Length(math.Inf(-1)), Y: vg.Length(math.Inf(-1))}}
	for _, p := range corners {
		q := c.m.apply(p)
		box.Min.X, box.Min.Y = min(box.Min.X, q.X), min(box.Min.Y, q.Y)
		box.Max.X, box.Max.Y = max(box.Max.X, q.X), max(box.Max.Y, q.Y)
	}
	c.boxes = append(c.boxes, textBox{text: str, box: box})
}

// ---- ticks ----------------------------------------------------------------

// niceTicks labels about four round values (1, 2 or 5 × 10^k apart),
// without trailing zeros, thousands and millions shortened to k and M so
// that the labels stay narrow.
type niceTicks struct{}

func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return []plot.Tick{{Value: lo, Label: fmtTick(lo)}}
	}
	raw := (hi - lo) / 4
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag * 10
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ts []plot.Tick
	for i := math.Ceil(lo / step); i*step <= hi+step*1e-9; i++ {
		v := i * step
		ts = append(ts, plot.Tick{Value: v, Label: shortNumber(v, step)})
		if minor := v + step/2; minor < hi {
			ts = append(ts, plot.Tick{Value: minor})
		}
	}
	return ts
}

// shortNumber renders a tick value of an axis whose ticks are step apart.
func shortNumber(v, step float64) string {
	unit, div := "", 1.0
	switch {
	case math.Abs(step) >= 1e6:
		unit, div = "M", 1e6
	case math.Abs(step) >= 1e4:
		unit, div = "k", 1e3
	}
	decimals := max(0, int(-math.Floor(math.Log10(step/div)+1e-9)))
	return strconv.FormatFloat(v/div, 'f', decimals, 64) + unit
}

func fmtTick(v float64) string {
	if math.Abs(v) < 1e-12 {
		return "0"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// ratioTicks labels a log-scaled axis of ratios with round effects
// ("-50 %", "0", "+10 %"), at most four of them, a third of the axis
// apart: the panels can be narrow and the labels are wide.
type ratioTicks struct{}

var tickEffects = []float64{-95, -90, -80, -75, -50, -40, -30, -25, -20, -15, -10, -5, -4, -3, -2, -1, -0.5,
	0, 0.5, 1, 2, 3, 4, 5, 10, 15, 20, 25, 30, 40, 50, 75, 100, 150, 200, 300, 400, 500, 700, 900, 1900}

func (ratioTicks) Ticks(lo, hi float64) []plot.Tick {
	span := math.Log(hi) - math.Log(lo)
	var ts []plot.Tick
	last := math.Inf(-1)
	for _, e := range tickEffects {
		r := 1 + e/100
		if r < lo || r > hi {
			continue
		}
		if math.Log(r)-last < span/3 && e != 0 {
			continue
		}
		if e == 0 && len(ts) > 0 && math.Log(r)-last < span/3 {
			ts = ts[:len(ts)-1] // 0 wins over its neighbour
		}
		ts = append(ts, plot.Tick{Value: r, Label: fmtEffectTick(e)})
		last = math.Log(r)
	}
	return ts
}

func fmtEffectTick(e float64) string {
	if e == 0 {
		return "0"
	}
	return fmt.Sprintf("%+g %%", e)
}

// rowTicks labels rows 0, -1, -2, ... from the top.
func rowTicks(labels []string) plot.ConstantTicks {
	var t plot.ConstantTicks
	for i, l := range labels {
		t = append(t, plot.Tick{Value: -float64(i), Label: l})
	}
	return t
}

// ---- panels ---------------------------------------------------------------

var (
	gray        = color.Gray{Y: 150}
	lightGray   = color.Gray{Y: 200}
	bandColor   = color.RGBA{R: 190, G: 215, B: 245, A: 255}
	freebsdBlue = color.RGBA{R: 40, G: 100, B: 200, A: 255}
	boundRed    = color.RGBA{R: 200, G: 30, B: 30, A: 255}
)

// jitter spreads the dots of one row so that equal values stay visible.
func jitter(i, n int) float64 {
	if n <= 1 {
		return 0
	}
	return (float64(i%7)/6 - 0.5) * 0.36
}

// dotsRow adds a row's per-round values as small dots.
func dotsRow(p *plot.Plot, xs []float64, y float64, c color.Color, horizontal bool) error {
	pts := make(plotter.XYs, 0, len(xs))
	for i, v := range xs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		if horizontal {
			pts = append(pts, plotter.XY{X: v, Y: y + jitter(i, len(xs))})
		} else {
			pts = append(pts, plotter.XY{X: y + jitter(i, len(xs))/2, Y: v})
		}
	}
	if len(pts) == 0 {
		return nil
	}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return err
	}
	sc.Shape = draw.CircleGlyph{}
	sc.Radius = vg.Points(1.6)
	sc.Color = c
	p.Add(sc)
	return nil
}

// hbar draws a horizontal segment at y from x0 to x1.
func hbar(p *plot.Plot, x0, x1, y float64, width vg.Length, c color.Color, dashes []vg.Length) error {
	l, err := plotter.NewLine(plotter.XYs{{X: x0, Y: y}, {X: x1, Y: y}})
	if err != nil {
		return err
	}
	l.Width, l.Color, l.Dashes = width, c, dashes
	p.Add(l)
	return nil
}

// vline draws a vertical segment at x from y0 to y1.
func vline(p *plot.Plot, x, y0, y1 float64, width vg.Length, c color.Color, dashes []vg.Length) (*plotter.Line, error) {
	l, err := plotter.NewLine(plotter.XYs{{X: x, Y: y0}, {X: x, Y: y1}})
	if err != nil {
		return nil, err
	}
	l.Width, l.Color, l.Dashes = width, c, dashes
	p.Add(l)
	return l, nil
}

// marker draws one glyph at (x, y).
func marker(p *plot.Plot, x, y float64, shape draw.GlyphDrawer, r vg.Length, c color.Color) (*plotter.Scatter, error) {
	sc, err := plotter.NewScatter(plotter.XYs{{X: x, Y: y}})
	if err != nil {
		return nil, err
	}
	sc.Shape, sc.Radius, sc.Color = shape, r, c
	p.Add(sc)
	return sc, nil
}

// levelPanel is what was measured: one row per point, each round a dot,
// the median a marker, min..max a bar, metric from 0.
func levelPanel(rev *Review, metric string) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "what was measured: " + metric
	p.Title.TextStyle.Font.Size = vg.Points(10)
	p.X.Label.Text = metric + " (a dot per round; median a square, min..max a bar)"
	p.X.Tick.Marker = niceTicks{}
	var labels []string
	xmax := 0.0
	for i, pt := range rev.Points {
		st, ok := pt.Metrics[metric]
		if !ok || math.IsNaN(st.Median) {
			continue
		}
		y := -float64(len(labels))
		labels = append(labels, pointName(pt))
		c := plotutil.Color(i % 7)
		if err := dotsRow(p, st.Samples, y, lightGray, true); err != nil {
			return nil, err
		}
		if err := hbar(p, st.Min, st.Max, y, vg.Points(1.2), c, nil); err != nil {
			return nil, err
		}
		if _, err := marker(p, st.Median, y, draw.BoxGlyph{}, vg.Points(3.5), c); err != nil {
			return nil, err
		}
		xmax = max(xmax, st.Max)
	}
	p.Y.Tick.Marker = rowTicks(labels)
	p.Y.Min, p.Y.Max = -float64(len(labels))+0.4, 0.6
	p.X.Min, p.X.Max = 0, xmax*1.08
	return p, nil
}

// chartLabel is a comparison's row label: its name, shortened, with a
// star when it decides.
func chartLabel(c Comparison) string {
	n := c.Name
	for _, cut := range []string{", CPU per packet", " (budget"} {
		if i := strings.Index(n, cut); i > 0 && cut != ", CPU per packet" {
			n = n[:i]
		}
	}
	n = strings.NewReplacer("TX on its RX queue's CPU / ", "own CPU / ", "batched/per-packet input at ", "batched/per-packet, ",
		"cost of the batched path at batches of one", "batches of one: cost", ", CPU per packet", ", cpu-ns").Replace(n)
	if c.Decides {
		n += " *"
	}
	return n
}

// forestPanel is a panel of comparisons: one row each, each round's
// advantage a dot, the median a square, the interval of the median a
// thick bar, FreeBSD's range shaded, a bound dashed, against 1 (no
// effect), on a log scale labelled in effects.
func forestPanel(title string, cs []Comparison) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(10)
	p.X.Label.Text = "effect (log scale; * decides)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = ratioTicks{}
	lo, hi := 1.0, 1.0
	var labels []string
	for i, c := range cs {
		y := -float64(i)
		labels = append(labels, chartLabel(c))
		if len(c.FreeBSD) > 0 {
			flo, fhi := slices.Min(c.FreeBSD), slices.Max(c.FreeBSD)
			if fhi/flo < 1.004 {
				flo, fhi = flo/1.002, fhi*1.002
			}
			band, err := plotter.NewPolygon(plotter.XYs{{X: flo, Y: y - 0.4}, {X: fhi, Y: y - 0.4}, {X: fhi, Y: y + 0.4}, {X: flo, Y: y + 0.4}})
			if err != nil {
				return nil, err
			}
			band.Color, band.LineStyle.Width = bandColor, 0
			p.Add(band)
			for _, v := range c.FreeBSD {
				// Each of FreeBSD's figures as a line, so that a single one
				// is visible at any scale.
				if _, err := vline(p, v, y-0.4, y+0.4, vg.Points(1.5), freebsdBlue, nil); err != nil {
					return nil, err
				}
			}
			lo, hi = min(lo, flo), max(hi, fhi)
		}
		if c.Kind == "bound" {
			if _, err := vline(p, c.Bound, y-0.45, y+0.45, vg.Points(1.5), boundRed, []vg.Length{vg.Points(3), vg.Points(2)}); err != nil {
				return nil, err
			}
			lo, hi = min(lo, c.Bound), max(hi, c.Bound)
		}
		for _, a := range c.Advantage.Samples {
			if a > 0 {
				lo, hi = min(lo, a), max(hi, a)
			}
		}
		var pos []float64
		for _, a := range c.Advantage.Samples {
			if a > 0 {
				pos = append(pos, a)
			}
		}
		if err := dotsRow(p, pos, y, gray, true); err != nil {
			return nil, err
		}
		if l, h := float64(c.Lo), float64(c.Hi); l > 0 && h > 0 {
			if err := hbar(p, l, h, y, vg.Points(3), color.Black, nil); err != nil {
				return nil, err
			}
		}
		if m := c.Advantage.Median; m > 0 {
			if _, err := marker(p, m, y, draw.BoxGlyph{}, vg.Points(3.5), color.Black); err != nil {
				return nil, err
			}
		}
	}
	if _, err := vline(p, 1, -float64(len(cs))+0.5, 0.5, vg.Points(1), color.Black, nil); err != nil {
		return nil, err
	}
	lo, hi = min(lo, 0.98), max(hi, 1.02)
	pad := math.Pow(hi/lo, 0.06)
	p.X.Min, p.X.Max = lo/pad, hi*pad
	p.Y.Tick.Marker = rowTicks(labels)
	p.Y.Min, p.Y.Max = -float64(len(cs))+0.5, 0.5
	return p, nil
}

// forestLegend is the legend of a forest panel (and of dots in a level
// panel).
func forestLegend(l *plot.Legend, cs []Comparison) error {
	dot, _ := plotter.NewScatter(plotter.XYs{{}})
	dot.Shape, dot.Radius, dot.Color = draw.CircleGlyph{}, vg.Points(1.6), gray
	med, _ := plotter.NewScatter(plotter.XYs{{}})
	med.Shape, med.Radius, med.Color = draw.BoxGlyph{}, vg.Points(3.5), color.Black
	bar, _ := plotter.NewLine(plotter.XYs{{}, {X: 1}})
	bar.Width, bar.Color = vg.Points(3), color.Black
	l.Add("one round", dot)
	l.Add("median", med)
	l.Add("interval of the median", bar)
	for _, c := range cs {
		if len(c.FreeBSD) > 0 {
			band, _ := plotter.NewPolygon(plotter.XYs{{}, {X: 1}, {X: 1, Y: 1}})
			band.Color, band.LineStyle.Width = bandColor, 0
			fl, _ := plotter.NewLine(plotter.XYs{{}, {X: 1}})
			fl.Width, fl.Color = vg.Points(1.5), freebsdBlue
			l.Add("FreeBSD's effects, range", fl, band)
			break
		}
	}
	for _, c := range cs {
		if c.Kind == "bound" {
			b, _ := plotter.NewLine(plotter.XYs{{}, {X: 1}})
			b.Width, b.Color, b.Dashes = vg.Points(1.5), boundRed, []vg.Length{vg.Points(3), vg.Points(2)}
			l.Add("bound", b)
			break
		}
	}
	one, _ := plotter.NewLine(plotter.XYs{{}, {X: 1}})
	one.Width, one.Color = vg.Points(1), color.Black
	l.Add("no effect (1)", one)
	return nil
}

// reviewFigure is a review's two panels: its points in metric, and its
// comparisons.
func reviewFigure(rev *Review, title, metric string, _ []string) (*figure, error) {
	left, err := levelPanel(rev, metric)
	if err != nil {
		return nil, err
	}
	var dec, info []Comparison
	for _, c := range rev.Comparisons {
		if c.Decides {
			dec = append(dec, c)
		} else {
			info = append(info, c)
		}
	}
	f := &figure{title: title + "\nthe comparisons: each round's advantage of the favoured variant, above 1 (0 %) = it is better" +
		" (a bound: its extra cost); verdict: " + rev.Verdict.Result,
		panels: []*plot.Plot{left}, legend: newLegend(), w: 30 * vg.Centimeter}
	panel := func(title string, cs []Comparison) error {
		p, err := forestPanel(title, cs)
		if err == nil {
			f.panels = append(f.panels, p)
		}
		return err
	}
	switch {
	case len(dec) == 0:
		if err := panel("the comparisons: information only ("+rev.Verdict.Result+")", info); err != nil {
			return nil, err
		}
	case len(info) == 0:
		if err := panel("what the verdict uses", dec); err != nil {
			return nil, err
		}
	default:
		if err := panel("what the verdict uses", dec); err != nil {
			return nil, err
		}
		if err := panel("information only", info); err != nil {
			return nil, err
		}
		f.w = 42 * vg.Centimeter
	}
	if err := forestLegend(&f.legend, rev.Comparisons); err != nil {
		return nil, err
	}
	rows := max(len(rev.Points), len(rev.Comparisons))
	f.h = vg.Points(float64(130 + 24*rows))
	return f, nil
}

// fanInFigure: one panel per pair of modes the claim orders, Gb/s of the
// first over the second at each fan-in (each round a dot, a line through
// the medians) at each GOMAXPROCS, and FreeBSD's ratios dashed.
func fanInFigure(rev *Review, rep *Report) (*figure, error) {
	pairs := [][2]string{{"drbr", "mpring"}, {"drbr", "simple"}, {"simple", "mpring"}}
	name := map[string]string{"mpring": "mp_ring", "simple": "simple_tx", "drbr": "drbr"}
	f := &figure{title: fmt.Sprintf("simple_tx with drbr deferral: Gb/s of one mode over another's at the same fan-in, one TX queue, %d-byte frames\n"+
		"this run: a dot per round, a line through the medians; FreeBSD (96-core Turin, 400G) dashed; above 1 = the first mode is faster; verdict: %s",
		seedbench.FanInFrameLen, rev.Verdict.Result), legend: newLegend(), w: 30 * vg.Centimeter, h: 12 * vg.Centimeter}
	for pi, pr := range pairs {
		p := plot.New()
		p.Title.Text = name[pr[0]] + " / " + name[pr[1]]
		p.Title.TextStyle.Font.Size = vg.Points(10)
		p.X.Label.Text = "senders on one TX queue"
		p.Y.Label.Text = "Gb/s ratio (log scale)"
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.X.Tick.Marker = log2Ticks(seedbench.FanIns)
		p.Y.Tick.Marker = ratioAxisTicks{}
		lo, hi := 1.0, 1.0
		for gi, g := range rep.Settings.Procs {
			var line plotter.XYs
			c := plotutil.Color(gi)
			for _, n := range rep.Settings.Senders {
				b, ok1 := rev.find(pr[0], n, 0, g)
				w, ok2 := rev.find(pr[1], n, 0, g)
				if !ok1 || !ok2 {
					continue
				}
				bs, ws := b.Metrics[MGbps].Samples, w.Metrics[MGbps].Samples
				var rs []float64
				for i := range min(len(bs), len(ws)) {
					if bs[i] > 0 && ws[i] > 0 {
						rs = append(rs, bs[i]/ws[i])
					}
				}
				if len(rs) == 0 {
					continue
				}
				x := float64(n) * math.Pow(2, 0.08*float64(gi)-0.04*float64(len(rep.Settings.Procs)-1))
				pts := make(plotter.XYs, len(rs))
				for i, r := range rs {
					pts[i] = plotter.XY{X: x * math.Pow(2, jitter(i, len(rs))/6), Y: r}
					lo, hi = min(lo, r), max(hi, r)
				}
				sc, err := plotter.NewScatter(pts)
				if err != nil {
					return nil, err
				}
				sc.Shape, sc.Radius, sc.Color = draw.CircleGlyph{}, vg.Points(1.5), c
				p.Add(sc)
				line = append(line, plotter.XY{X: x, Y: newStat(rs).Median})
			}
			if len(line) > 0 {
				l, pts, err := plotter.NewLinePoints(line)
				if err != nil {
					return nil, err
				}
				l.Color, pts.Color, pts.Shape = c, c, draw.PyramidGlyph{}
				p.Add(l, pts)
				if pi == 0 {
					f.legend.Add(fmt.Sprintf("this run, GOMAXPROCS=%d", g), l, pts)
				}
			}
		}
		var fb plotter.XYs
		for k, n := range seedbench.FanIns {
			r := seedbench.FreeBSDFanInGbps[pr[0]][k] / seedbench.FreeBSDFanInGbps[pr[1]][k]
			fb = append(fb, plotter.XY{X: float64(n), Y: r})
			lo, hi = min(lo, r), max(hi, r)
		}
		l, pts, err := plotter.NewLinePoints(fb)
		if err != nil {
			return nil, err
		}
		l.Color, pts.Color, pts.Shape = color.Black, color.Black, draw.BoxGlyph{}
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l, pts)
		one, err := plotter.NewLine(plotter.XYs{{X: 0.8, Y: 1}, {X: 80, Y: 1}})
		if err != nil {
			return nil, err
		}
		one.Color = gray
		p.Add(one)
		if pi == 0 {
			f.legend.Add("FreeBSD", l, pts)
			f.legend.Add("ratio 1: equal", one)
		}
		pad := math.Pow(hi/lo, 0.08)
		p.Y.Min, p.Y.Max = lo/pad, hi*pad
		p.X.Min, p.X.Max = 0.8, 80
		f.panels = append(f.panels, p)
	}
	return f, nil
}

// ratioAxisTicks labels a log-scaled axis of ratios as ratios ("0.5",
// "1", "2").
type ratioAxisTicks struct{}

func (ratioAxisTicks) Ticks(lo, hi float64) []plot.Tick {
	span := math.Log(hi) - math.Log(lo)
	var ts []plot.Tick
	last := math.Inf(-1)
	for _, v := range []float64{0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1, 1.5, 2, 3, 5, 7, 10, 20, 50} {
		if v < lo || v > hi || math.Log(v)-last < span/8 {
			continue
		}
		ts = append(ts, plot.Tick{Value: v, Label: fmtTick(v)})
		last = math.Log(v)
	}
	return ts
}

func log2Ticks(xs []int) plot.ConstantTicks {
	var t plot.ConstantTicks
	for _, x := range xs {
		t = append(t, plot.Tick{Value: float64(x), Label: strconv.Itoa(x)})
	}
	return t
}
