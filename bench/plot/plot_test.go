package plot

import (
	"bytes"
	"encoding/xml"
	"io"
	"strconv"
	"strings"
	"testing"
)

// parse checks the SVG is well-formed XML and returns every polyline's
// points and every text.
func parse(t *testing.T, svg []byte) (lines [][][2]float64, texts []string, w, h float64) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(svg))
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, svg)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		attr := func(n string) string {
			for _, a := range se.Attr {
				if a.Name.Local == n {
					return a.Value
				}
			}
			return ""
		}
		switch se.Name.Local {
		case "svg":
			w, _ = strconv.ParseFloat(attr("width"), 64)
			h, _ = strconv.ParseFloat(attr("height"), 64)
		case "polyline":
			var pts [][2]float64
			for _, p := range strings.Fields(attr("points")) {
				xy := strings.Split(p, ",")
				x, _ := strconv.ParseFloat(xy[0], 64)
				y, _ := strconv.ParseFloat(xy[1], 64)
				pts = append(pts, [2]float64{x, y})
			}
			lines = append(lines, pts)
		case "text":
			var s string
			if err := d.DecodeElement(&s, &se); err != nil {
				t.Fatal(err)
			}
			texts = append(texts, s)
		}
	}
}

func TestChartLogAxesInsidePlotArea(t *testing.T) {
	c := Chart{
		Title: "calls/s <by> clients",
		X:     Axis{Label: "clients", Log: true, Ticks: []float64{1, 4, 16, 64, 256}},
		Y:     Axis{Label: "calls/s", Log: true},
		Series: []Series{
			{Name: "seqsvr & co", Points: []Point{{1, 900}, {16, 12000}, {256, 40000}}},
			{Name: "etcd", Points: []Point{{1, 300}, {16, 2000}, {256, 2500}}, Dashed: true},
		},
		Markers: []Marker{{X: 64, Label: "kill"}},
	}
	svg, err := c.SVG()
	if err != nil {
		t.Fatal(err)
	}
	lines, texts, w, h := parse(t, svg)
	if len(lines) != 2 || len(lines[0]) != 3 {
		t.Fatalf("polylines %v", lines)
	}
	for _, l := range lines {
		for _, p := range l {
			// The legend adds a line per series under the chart's own height.
			if p[0] < padLeft || p[0] > w-padRight || p[1] < padTop || p[1] > h-2*legendLine-8-padBottom {
				t.Fatalf("point %v outside the plot area of a %gx%g chart", p, w, h)
			}
		}
	}
	// Larger values are higher up (smaller y) and further right.
	if a, b := lines[0][0], lines[0][2]; !(b[0] > a[0] && b[1] < a[1]) {
		t.Fatalf("first and last point %v %v not rising to the right", a, b)
	}
	all := strings.Join(texts, "|")
	for _, want := range []string{"calls/s <by> clients", "seqsvr & co", "etcd", "kill", "256", "10k", "100"} {
		if !strings.Contains(all, want) {
			t.Errorf("text %q missing from %q", want, all)
		}
	}
	// Same input, same bytes: a regenerated report only changes with its numbers.
	again, _ := c.SVG()
	if !bytes.Equal(svg, again) {
		t.Fatal("output not deterministic")
	}
}

func TestChartLinearAxisStartsAtZero(t *testing.T) {
	c := Chart{Title: "t", X: Axis{Label: "s"}, Y: Axis{Label: "n"},
		Series: []Series{{Name: "a", Points: []Point{{0, 5}, {1, 17}, {2, 0}}}}}
	svg, err := c.SVG()
	if err != nil {
		t.Fatal(err)
	}
	lines, texts, _, h := parse(t, svg)
	if y, bottom := lines[0][2][1], h-legendLine-8-padBottom; y != bottom {
		t.Fatalf("y=0 drawn at %g, want the bottom %g", y, bottom)
	}
	if !strings.Contains(strings.Join(texts, "|"), "|0|") {
		t.Fatalf("no 0 tick in %q", texts)
	}
}

func TestChartErrors(t *testing.T) {
	for name, c := range map[string]Chart{
		"no points":   {Title: "empty", Series: []Series{{Name: "a"}}},
		"log of zero": {Title: "z", Y: Axis{Log: true}, Series: []Series{{Name: "a", Points: []Point{{1, 0}}}}},
		"non-finite":  {Title: "n", Series: []Series{{Name: "a", Points: []Point{{1, inf()}}}}},
	} {
		if _, err := c.SVG(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func inf() float64 { var z float64; return 1 / z }

func TestCompact(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 950: "950", 1500: "1.5k", 12000: "12k", 2e6: "2M", 0.5: "0.5", 2.5e9: "2.5G"} {
		if got := Compact(v); got != want {
			t.Errorf("Compact(%g) = %q, want %q", v, got, want)
		}
	}
}
