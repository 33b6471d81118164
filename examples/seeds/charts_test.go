package main

import (
	"bytes"
	"fmt"
	"image"
	"image/draw"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot/vg"

	"github.com/goiflib/goiflib/internal/race"
)

// The chart test renders every SVG the command writes with a real SVG
// renderer, rsvg-convert (Debian's librsvg2-bin; .ci/run installs it and
// sets SEEDS_REQUIRE_RSVG, so that CI cannot skip it), twice: with the
// text and without it. The pixels that differ are the text. It checks
// that nothing is drawn outside the canvas (the SVG is rendered with a
// margin around it, which must stay empty) and that no text lands on
// other ink: titles, tick labels and legends stay off the lines, the
// markers and each other.

// TestChartsRender draws the charts of a -quick run of every section and
// checks them as the file comment says. Drawing and the pixel checks are
// plain Go, several times slower under the race detector and with no
// concurrency to check, so it skips there; .ci/run runs it without -race.
func TestChartsRender(t *testing.T) {
	if race.Enabled {
		t.Skip("skipped under -race; .ci/run runs it without: go test -run '^TestChartsRender$' ./examples/seeds/")
	}
	bin := rsvg(t)
	o, err := parseFlags([]string{"-quick", "-afxdp=false", "-senders", "1,2,8"}, io.Discard)
	require.NoError(t, err)
	rep, err := run(o, io.Discard, io.Discard)
	require.NoError(t, err)
	checkChartsRender(t, bin, rep)
}

// rsvg returns the path of rsvg-convert, or skips the test.
func rsvg(t *testing.T) string {
	p, err := exec.LookPath("rsvg-convert")
	if err != nil {
		require.Empty(t, os.Getenv("SEEDS_REQUIRE_RSVG"), "rsvg-convert not found and SEEDS_REQUIRE_RSVG is set: %v", err)
		t.Skip("rsvg-convert (librsvg2-bin) not installed; .ci/run installs it")
	}
	return p
}

var svgHeader = regexp.MustCompile(`<svg width="([0-9.]+)pt" height="([0-9.]+)pt" viewBox="0 0 ([0-9.]+) ([0-9.]+)"`)

// renderPadded renders an SVG file to an image with a margin of pad
// points on every side, at 2 pixels per point, and returns the canvas's
// rectangle in it and its height in points.
func renderPadded(t *testing.T, bin, path string, pad float64) (image.Image, image.Rectangle, float64) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	m := svgHeader.FindSubmatch(b)
	require.NotNil(t, m, "%s: no svg header", path)
	w, _ := strconv.ParseFloat(string(m[3]), 64)
	h, _ := strconv.ParseFloat(string(m[4]), 64)
	// Width and height in user units (px), so that --zoom 2 gives 2
	// pixels per unit whatever DPI rsvg-convert assumes for pt.
	padded := svgHeader.ReplaceAll(b, []byte(fmt.Sprintf(`<svg width="%g" height="%g" viewBox="%g %g %g %g"`, w+2*pad, h+2*pad, -pad, -pad, w+2*pad, h+2*pad)))
	in := filepath.Join(t.TempDir(), "padded.svg")
	require.NoError(t, os.WriteFile(in, padded, 0o644))
	out, err := exec.Command(bin, "--zoom", "2", "--format", "png", in).Output()
	require.NoError(t, err, "%s: rsvg-convert", path)
	img, err := png.Decode(bytes.NewReader(out))
	require.NoError(t, err)
	require.InDelta(t, 2*(w+2*pad), float64(img.Bounds().Dx()), 2, "%s: 2 pixels per unit", path)
	inner := image.Rect(int(2*pad)-1, int(2*pad)-1, int(2*(pad+w))+2, int(2*(pad+h))+2)
	return img, inner, h
}

// pixels is a rendered image as RGBA bytes, row by row.
type pixels struct {
	w, h int
	pix  []byte
}

func toPixels(img image.Image) pixels {
	b := img.Bounds()
	rgba := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(rgba, rgba.Bounds(), img, b.Min, draw.Src)
	return pixels{w: b.Dx(), h: b.Dy(), pix: rgba.Pix}
}

// checkChartsRender draws the report's charts with and without text and
// checks each as the file comment says.
func checkChartsRender(t *testing.T, bin string, rep *Report) {
	dir := t.TempDir()
	with, areas, err := drawCharts(filepath.Join(dir, "text"), rep, ".svg", true)
	require.NoError(t, err)
	without, err := renderCharts(filepath.Join(dir, "notext"), rep, ".svg", false)
	require.NoError(t, err)
	require.Len(t, without, len(with))
	require.NotEmpty(t, with)
	const pad = 40
	for i := range with {
		name := filepath.Base(with[i])
		ai, inner, h := renderPadded(t, bin, with[i], pad)
		bi, _, _ := renderPadded(t, bin, without[i], pad)
		require.Equal(t, ai.Bounds(), bi.Bounds(), name)
		a, b := toPixels(ai), toPixels(bi)
		// The panels' data areas in pixels (y down from the top).
		var data []image.Rectangle
		for _, r := range areas[i].data {
			px := func(x, y vg.Length) image.Point {
				return image.Pt(int(2*(pad+x.Points())), int(2*(pad+h-y.Points())))
			}
			lo, hi := px(r.Min.X, r.Max.Y), px(r.Max.X, r.Min.Y)
			data = append(data, image.Rectangle{Min: lo, Max: hi}.Inset(2))
		}
		outside, text, overlap, onData := 0, 0, 0, 0
		var firstOut, firstOverlap, firstOnData image.Point
		// Straight over the pixel bytes: this runs under the race
		// detector in CI.
		inkB := make([]bool, b.w*b.h)
		for i := range inkB {
			c := b.pix[4*i : 4*i+4]
			inkB[i] = c[3] > 0x20 && (c[0] < 0xe0 || c[1] < 0xe0 || c[2] < 0xe0)
		}
		near := func(x, y int) bool {
			for _, d := range [][2]int{{0, 0}, {1, 0}, {-1, 0}, {0, 1}, {0, -1}} {
				if xx, yy := x+d[0], y+d[1]; xx >= 0 && yy >= 0 && xx < b.w && yy < b.h && inkB[yy*b.w+xx] {
					return true
				}
			}
			return false
		}
		for y := range a.h {
			for x := range a.w {
				i := 4 * (y*a.w + x)
				pa, pb := a.pix[i:i+4:i+4], b.pix[i:i+4:i+4]
				in := x >= inner.Min.X && x < inner.Max.X && y >= inner.Min.Y && y < inner.Max.Y
				if !in {
					if pa[3] > 0x20 {
						if outside == 0 {
							firstOut = image.Pt(x, y)
						}
						outside++
					}
					continue
				}
				if pa[0] == pb[0] && pa[1] == pb[1] && pa[2] == pb[2] && pa[3] == pb[3] {
					continue
				}
				text++
				for _, d := range data {
					if image.Pt(x, y).In(d) {
						if onData == 0 {
							firstOnData = image.Pt(x, y)
						}
						onData++
					}
				}
				// Text on other ink: a pixel of text where the chart
				// without text already has a line or a marker, or next
				// to one (a glyph touching a line).
				if near(x, y) {
					if overlap == 0 {
						firstOverlap = image.Pt(x, y)
					}
					overlap++
				}
			}
		}
		assert.Zero(t, outside, "%s: %d pixels drawn outside the canvas, the first at %v (2 px per pt, %d pt margin)", name, outside, firstOut, pad)
		assert.Positive(t, text, "%s: no text drawn", name)
		assert.Zero(t, onData, "%s: %d text pixels inside a panel's data area, the first at %v", name, onData, firstOnData)
		assert.LessOrEqual(t, overlap, text/200, "%s: %d of %d text pixels on or against other ink, the first at %v", name, overlap, text, firstOverlap)
		checkLayout(t, name, areas[i])
	}
}

// checkLayout checks where the figure put each string: inside the
// canvas, off every panel's data area, and at least gap points clear of
// every other string.
func checkLayout(t *testing.T, name string, lay layout) {
	t.Helper()
	const gap = 2
	canvas := vg.Rectangle{Max: vg.Point{X: lay.w, Y: lay.h}}
	overlaps := func(a, b vg.Rectangle) bool {
		return a.Min.X < b.Max.X+gap && b.Min.X < a.Max.X+gap && a.Min.Y < b.Max.Y+gap && b.Min.Y < a.Max.Y+gap
	}
	inside := func(a, b vg.Rectangle) bool {
		return a.Min.X >= b.Min.X && a.Min.Y >= b.Min.Y && a.Max.X <= b.Max.X && a.Max.Y <= b.Max.Y
	}
	require.NotEmpty(t, lay.text, name)
	for i, a := range lay.text {
		assert.True(t, inside(a.box, canvas), "%s: %q at %v leaves the canvas %v", name, a.text, a.box, canvas)
		for _, d := range lay.data {
			on := a.box.Min.X < d.Max.X && d.Min.X < a.box.Max.X && a.box.Min.Y < d.Max.Y && d.Min.Y < a.box.Max.Y
			assert.False(t, on, "%s: %q at %v is on the data area %v", name, a.text, a.box, d)
		}
		for _, b := range lay.text[i+1:] {
			assert.False(t, overlaps(a.box, b.box), "%s: %q at %v overlaps %q at %v", name, a.text, a.box, b.text, b.box)
		}
	}
}
