package report

import (
	"fmt"
	"image/color"
	"math"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// A chart is 900×450 pixels at 96 dots per inch: wide enough for a legend
// column to the right of the plot, where it never hides a line.
const (
	chartWidth  = 900
	chartHeight = 450
	chartDPI    = 96
)

// maxLegend is the most characters of a legend entry drawn, so a long
// scheduler or queue name cannot squeeze the plot out of the chart.
const maxLegend = 36

// palette is Tableau's ten colours, told apart by most readers including
// most with colour-blindness; grey is kept out of it for the lines that
// are not one scheduler or one queue (capacity, demand, other queues).
var palette = []color.Color{
	rgb(0x4e79a7), rgb(0xf28e2b), rgb(0xe15759), rgb(0x76b7b2), rgb(0x59a14f),
	rgb(0xb8960b), rgb(0xb07aa1), rgb(0xff9da7), rgb(0x9c755f), rgb(0x17becf),
}

var (
	black = rgb(0x222222)
	grey  = rgb(0x8c8c8c)
)

func rgb(v uint32) color.Color {
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}
}

// colour is the i-th colour of the palette, round again past its end.
func colour(i int) color.Color {
	if i < 0 {
		i = 0
	}
	return palette[i%len(palette)]
}

// line is one line of a chart, x in trace seconds (or the chart's own x
// unit), y in the chart's unit.
type line struct {
	pts    []point
	colour color.Color
	dashed bool
	// width is in points; 0 is 1.5.
	width float64
	// legend is the line's entry; "" leaves it out of the legend.
	legend string
}

// legendEntry is a legend entry drawn without a line of its own, for
// saying what a style means (solid: allocated, dashed: deserved).
type legendEntry struct {
	text   string
	colour color.Color
	dashed bool
}

// chart is one PNG: lines as steps (the numbers hold until the next
// sample), a legend in a column on the right, axes with their units.
type chart struct {
	title, xLabel, yLabel string
	// xScale divides every x, to draw trace seconds in minutes or hours.
	xScale float64
	// xMin and xMax fix the x range when xMax > xMin.
	xMin, xMax float64
	// logX draws x, trace seconds (xScale 1), on a log axis.
	logX bool
	// yScale multiplies every y (100 to draw shares as percentages); yMax
	// fixes the top when above 0.
	yScale, yMax float64
	// wholeY labels y only at whole numbers, for counts.
	wholeY bool
	lines  []line
	extra  []legendEntry
}

// empty tells whether the chart has nothing to draw.
func (c *chart) empty() bool {
	for _, l := range c.lines {
		if len(finite(l.pts)) > 0 {
			return false
		}
	}
	return true
}

// save draws the chart into path as a PNG.
func (c *chart) save(path string) (err error) {
	p := plot.New()
	p.Title.Text = c.title
	p.Title.TextStyle.Font.Size = vg.Points(14)
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text = c.xLabel
	p.Y.Label.Text = c.yLabel
	p.X.Label.TextStyle.Font.Size = vg.Points(12)
	p.Y.Label.TextStyle.Font.Size = vg.Points(12)
	p.X.Tick.Label.Font.Size = vg.Points(11)
	p.Y.Tick.Label.Font.Size = vg.Points(11)
	p.X.Tick.Marker = niceTicks{labels: 8}
	if c.logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = durationTicks{}
	}
	p.Y.Tick.Marker = niceTicks{labels: 6, whole: c.wholeY}
	grid := plotter.NewGrid()
	grid.Vertical.Color = rgb(0xdadada)
	grid.Horizontal.Color = rgb(0xdadada)
	p.Add(grid)

	legend := plot.NewLegend()
	legend.TextStyle.Font.Size = vg.Points(11)
	legend.Top, legend.Left = true, true
	legend.ThumbnailWidth = vg.Points(28)
	legend.Padding = vg.Points(3)
	for _, e := range c.extra {
		legend.Add(shorten(e.text, maxLegend), style(e.colour, e.dashed, 1.5))
	}
	xs, ys := c.xScale, c.yScale
	if xs == 0 {
		xs = 1
	}
	if ys == 0 {
		ys = 1
	}
	for _, l := range c.lines {
		pts := finite(l.pts)
		if len(pts) == 0 {
			continue
		}
		xy := make(plotter.XYs, len(pts))
		for i, pt := range pts {
			xy[i] = plotter.XY{X: pt.X / xs, Y: pt.Y * ys}
		}
		pl, err := plotter.NewLine(xy)
		if err != nil {
			return fmt.Errorf("chart %q: %w", c.title, err)
		}
		pl.StepStyle = plotter.PostStep
		width := l.width
		if width == 0 {
			width = 1.5
		}
		pl.LineStyle = style(l.colour, l.dashed, width).LineStyle
		p.Add(pl)
		if l.legend != "" {
			legend.Add(shorten(l.legend, maxLegend), pl)
		}
	}
	c.fixRanges(p)

	w := vg.Length(chartWidth) * vg.Inch / chartDPI
	h := vg.Length(chartHeight) * vg.Inch / chartDPI
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(chartDPI))
	dc := draw.New(img)
	margin := vg.Points(10)
	legendWidth := legend.Rectangle(dc).Size().X
	if legendWidth > 0 {
		legendWidth += 2 * margin
	}
	p.Draw(draw.Crop(dc, margin, -legendWidth-margin, margin, -margin))
	legend.Draw(draw.Crop(dc, w-legendWidth+margin, -margin, margin, -3*margin))

	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(f)
	return err
}

// fixRanges starts y at 0 and keeps a flat line off the axis, and fixes
// x to the chart's range.
func (c *chart) fixRanges(p *plot.Plot) {
	if c.xMax > c.xMin {
		xs := c.xScale
		if xs == 0 {
			xs = 1
		}
		p.X.Min, p.X.Max = c.xMin/xs, c.xMax/xs
	}
	p.Y.Min = math.Min(p.Y.Min, 0)
	switch {
	case c.yMax > 0:
		p.Y.Max = c.yMax
	case p.Y.Max > 0:
		p.Y.Max *= 1.05
	default:
		p.Y.Max = 1
	}
}

// style is a line's look, as a legend thumbnail.
func style(c color.Color, dashed bool, width float64) *plotter.Line {
	l := &plotter.Line{}
	l.LineStyle = draw.LineStyle{Color: c, Width: vg.Points(width)}
	if dashed {
		l.LineStyle.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
	}
	return l
}

// finite leaves out points a chart cannot place.
func finite(pts []point) []point {
	out := pts[:0:0]
	for _, p := range pts {
		if !math.IsNaN(p.X) && !math.IsNaN(p.Y) && !math.IsInf(p.X, 0) && !math.IsInf(p.Y, 0) {
			out = append(out, p)
		}
	}
	return out
}

// shorten cuts s to at most n characters, marking the cut with "…".
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
