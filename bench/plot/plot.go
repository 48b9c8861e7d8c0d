// Package plot draws the benchmark reports' line charts as standalone SVG:
// throughput against client count, latency CDFs and failover timelines.
// It is a small hand-kept writer (no plotting library) so the main module
// keeps its dependencies; its output is deterministic for the same input,
// so a regenerated report differs only where the numbers do.
package plot

import (
	"errors"
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// Point is one (x, y) sample.
type Point struct{ X, Y float64 }

// Series is one line of a chart.
type Series struct {
	Name   string
	Points []Point
	Dashed bool
	// Color overrides the palette (any SVG color); "" takes the next one.
	Color string
}

// Marker is a vertical line at X with a label (a kill, a restart).
type Marker struct {
	X     float64
	Label string
}

// Axis describes one axis. A log axis needs every value > 0.
type Axis struct {
	Label string
	Log   bool
	// Min and Max fix the range when Max > Min; otherwise it fits the data
	// (from 0 on a linear axis).
	Min, Max float64
	// Format prints a tick value; nil uses a compact number (1.5k, 2M).
	Format func(float64) string
	// Ticks, when set, are the values labelled (e.g. 1, 4, 16, 64, 256
	// clients) instead of the computed ones.
	Ticks []float64
}

// Chart is one line chart.
type Chart struct {
	Title   string
	X, Y    Axis
	Series  []Series
	Markers []Marker
	// Width and Height in pixels; 0 takes 720x420.
	Width, Height int
}

// palette is readable on white and tells lines apart in grey print too.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"}

// The plot area's margins; the legend goes under the x axis label, one
// line per series, so long names are never cut.
const (
	padLeft, padRight, padTop, padBottom = 72.0, 24.0, 36.0, 52.0
	legendLine                           = 18.0
)

// SVG renders the chart. It fails on a chart with no points, or with a
// value a log axis cannot show.
func (c Chart) SVG() ([]byte, error) {
	w, h := float64(c.Width), float64(c.Height)
	if w == 0 {
		w = 720
	}
	if h == 0 {
		h = 420
	}
	xs, ys, err := c.data()
	if err != nil {
		return nil, err
	}
	legendTop := h // the chart's own height; the legend adds below it
	total := h + float64(len(c.Series))*legendLine + 8
	xsc, err := newScale(c.X, xs, padLeft, w-padRight)
	if err != nil {
		return nil, fmt.Errorf("plot %q: x axis: %w", c.Title, err)
	}
	ysc, err := newScale(c.Y, ys, h-padBottom, padTop)
	if err != nil {
		return nil, fmt.Errorf("plot %q: y axis: %w", c.Title, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" viewBox="0 0 %g %g" font-family="sans-serif" font-size="12">`+"\n", w, total, w, total)
	fmt.Fprintf(&b, `<rect width="%g" height="%g" fill="white"/>`+"\n", w, total)
	fmt.Fprintf(&b, `<text x="%g" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", padLeft, esc(c.Title))
	// Grid and ticks.
	for _, t := range xsc.ticks() {
		x := xsc.at(t)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e5e5e5"/>`+"\n", x, padTop, x, h-padBottom)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, h-padBottom+16, esc(label(c.X, t)))
	}
	for _, t := range ysc.ticks() {
		y := ysc.at(t)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e5e5e5"/>`+"\n", padLeft, y, w-padRight, y)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", padLeft-6, y+4, esc(label(c.Y, t)))
	}
	fmt.Fprintf(&b, `<rect x="%g" y="%g" width="%g" height="%g" fill="none" stroke="#333"/>`+"\n", padLeft, padTop, w-padRight-padLeft, h-padBottom-padTop)
	fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle">%s</text>`+"\n", (padLeft+w-padRight)/2, h-12, esc(c.X.Label))
	fmt.Fprintf(&b, `<text transform="translate(16 %g) rotate(-90)" text-anchor="middle">%s</text>`+"\n", (padTop+h-padBottom)/2, esc(c.Y.Label))
	for _, m := range c.Markers {
		if m.X < xsc.lo || m.X > xsc.hi {
			continue
		}
		x := xsc.at(m.X)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="#555" stroke-dasharray="2 3"/>`+"\n", x, padTop, x, h-padBottom)
		fmt.Fprintf(&b, `<text x="%.1f" y="%g" font-size="11" fill="#555">%s</text>`+"\n", x+3, padTop+12, esc(m.Label))
	}
	// Lines (clipped to the plot area, so a fixed axis range cuts a spike
	// instead of drawing over the labels), then the legend.
	fmt.Fprintf(&b, `<clipPath id="area"><rect x="%g" y="%g" width="%g" height="%g"/></clipPath>`+"\n", padLeft, padTop, w-padRight-padLeft, h-padBottom-padTop)
	for i, s := range c.Series {
		color := s.Color
		if color == "" {
			color = palette[i%len(palette)]
		}
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		var pts []string
		for _, p := range s.Points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", xsc.at(p.X), ysc.at(p.Y)))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s clip-path="url(#area)" points="%s"/>`+"\n", color, dash, strings.Join(pts, " "))
		if len(s.Points) <= 12 {
			for _, p := range pts {
				xy := strings.Split(p, ",")
				fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="2.5" fill="%s" clip-path="url(#area)"/>`+"\n", xy[0], xy[1], color)
			}
		}
		ly := legendTop + 4 + float64(i)*legendLine
		lx := padLeft
		fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="%s" stroke-width="2"%s/>`+"\n", lx, ly, lx+22, ly, color, dash)
		fmt.Fprintf(&b, `<text x="%g" y="%g">%s</text>`+"\n", lx+28, ly+4, esc(s.Name))
	}
	b.WriteString("</svg>\n")
	return []byte(b.String()), nil
}

// data collects every coordinate and checks the series.
func (c Chart) data() (xs, ys []float64, err error) {
	for _, s := range c.Series {
		for _, p := range s.Points {
			if math.IsNaN(p.X) || math.IsNaN(p.Y) || math.IsInf(p.X, 0) || math.IsInf(p.Y, 0) {
				return nil, nil, fmt.Errorf("plot %q: series %q has a non-finite point", c.Title, s.Name)
			}
			xs, ys = append(xs, p.X), append(ys, p.Y)
		}
	}
	if len(xs) == 0 {
		return nil, nil, fmt.Errorf("plot %q: no points", c.Title)
	}
	return xs, ys, nil
}

func esc(s string) string { return html.EscapeString(s) }

func label(a Axis, v float64) string {
	if a.Format != nil {
		return a.Format(v)
	}
	return Compact(v)
}

// Compact prints v in at most about four characters: 950, 1.5k, 12k, 2M.
func Compact(v float64) string {
	av := math.Abs(v)
	for _, u := range []struct {
		div  float64
		unit string
	}{{1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if av >= u.div {
			return trim(v/u.div) + u.unit
		}
	}
	return trim(v)
}

func trim(v float64) string {
	if math.Abs(v) >= 10 || v == math.Trunc(v) {
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// scale maps data values to pixels on one axis.
type scale struct {
	log         bool
	lo, hi      float64 // data range
	from, to    float64 // pixel range
	llo, lhi    float64 // log10 of the range, on a log axis
	fixedDomain bool
	fixedTicks  []float64
}

var errLogNonPositive = errors.New("a log axis needs values > 0")

func newScale(a Axis, vs []float64, from, to float64) (*scale, error) {
	s := &scale{log: a.Log, from: from, to: to, fixedTicks: a.Ticks}
	if a.Max > a.Min {
		s.lo, s.hi, s.fixedDomain = a.Min, a.Max, true
	} else {
		s.lo, s.hi = vs[0], vs[0]
		for _, v := range vs {
			s.lo, s.hi = min(s.lo, v), max(s.hi, v)
		}
		if !a.Log {
			s.lo = min(s.lo, 0)
			if s.hi == s.lo {
				s.hi = s.lo + 1
			}
			s.hi = niceCeil(s.hi)
		}
	}
	if a.Log {
		if s.lo <= 0 {
			return nil, errLogNonPositive
		}
		for _, v := range vs {
			if v <= 0 {
				return nil, errLogNonPositive
			}
		}
		if !s.fixedDomain {
			s.lo = math.Pow(10, math.Floor(math.Log10(s.lo)))
			s.hi = math.Pow(10, math.Ceil(math.Log10(s.hi)))
			if s.hi == s.lo {
				s.hi *= 10
			}
		}
		s.llo, s.lhi = math.Log10(s.lo), math.Log10(s.hi)
	}
	return s, nil
}

// at is the pixel of v.
func (s *scale) at(v float64) float64 {
	var f float64
	if s.log {
		f = (math.Log10(v) - s.llo) / (s.lhi - s.llo)
	} else {
		f = (v - s.lo) / (s.hi - s.lo)
	}
	return s.from + f*(s.to-s.from)
}

// ticks are the values to label: powers of 10 (and 2x, 5x when few) on a
// log axis, about six round steps on a linear one.
func (s *scale) ticks() []float64 {
	var out []float64
	if len(s.fixedTicks) > 0 {
		for _, v := range s.fixedTicks {
			if v >= s.lo && v <= s.hi && (!s.log || v > 0) {
				out = append(out, v)
			}
		}
		return out
	}
	if s.log {
		decades := s.lhi - s.llo
		mults := []float64{1}
		if decades <= 3 {
			mults = []float64{1, 2, 5}
		}
		for e := math.Floor(s.llo); e <= math.Ceil(s.lhi); e++ {
			for _, m := range mults {
				v := m * math.Pow(10, e)
				if v >= s.lo*(1-1e-9) && v <= s.hi*(1+1e-9) {
					out = append(out, v)
				}
			}
		}
		return out
	}
	step := niceStep((s.hi - s.lo) / 6)
	for v := math.Ceil(s.lo/step) * step; v <= s.hi+step*1e-9; v += step {
		out = append(out, math.Round(v/step)*step)
	}
	return out
}

// niceStep rounds a raw step up to 1, 2 or 5 times a power of 10.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// niceCeil rounds v up to the next multiple of a nice step.
func niceCeil(v float64) float64 {
	st := niceStep(v / 6)
	return math.Ceil(v/st) * st
}
