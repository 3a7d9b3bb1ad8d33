package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sample is a run's chart data, in the shape of the figures BENCHMARKS.md
// reports (the values only need to be plausible).
func sample() *chartData {
	d := &chartData{}
	res := cliResult{}
	for name, msv := range map[string]float64{
		"claim-1k": 20.4, "claim-10k": 28.0, "claim-100k": 72.4,
		"minclaim-1k": 18.1, "minclaim-10k": 24.8, "minclaim-100k": 60.2,
		"bd-ready-1k": 120, "bd-ready": 733.6, "bd-ready-100k": 7100,
	} {
		res[name] = &probe{name: name, samples: []time.Duration{time.Duration(msv * 1e6)}}
	}
	d.cliCharts(res)
	for _, s := range []shapePoint{
		{48, 20, 875 * time.Millisecond, 1055 * time.Millisecond, 900 * time.Millisecond, 54, 63},
		{128, 10, 2157 * time.Millisecond, 3015 * time.Millisecond, 2400 * time.Millisecond, 53, 61},
		{256, 4, 4620 * time.Millisecond, 5613 * time.Millisecond, 5100 * time.Millisecond, 51, 59},
	} {
		d.shapes = append(d.shapes, s)
	}
	return d
}

// svgDoc is what the test reads back from a chart.
type svgDoc struct {
	XMLName xml.Name   `xml:"svg"`
	Panels  []svgPanel `xml:"g"`
}

// svgPanel is one panel's group: its series.
type svgPanel struct {
	Series []svgSeries `xml:"g"`
}

// svgSeries is one series' group: its line, markers and legend entry.
type svgSeries struct {
	Name     string `xml:"data-name,attr"`
	Polyline struct {
		Dash   string `xml:"stroke-dasharray,attr"`
		Points string `xml:"points,attr"`
	} `xml:"polyline"`
	Circles []struct {
		CX float64 `xml:"cx,attr"`
		CY float64 `xml:"cy,attr"`
	} `xml:"circle"`
	Legend string `xml:"text"`
}

// wellFormed reads every token of data with encoding/xml.
func wellFormed(t *testing.T, data []byte) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	for {
		_, err := dec.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, data)
		}
	}
}

func parse(t *testing.T, data []byte) svgDoc {
	t.Helper()
	wellFormed(t, data)
	var doc svgDoc
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func points(t *testing.T, s string) [][2]float64 {
	t.Helper()
	var out [][2]float64
	for _, f := range strings.Fields(s) {
		var p [2]float64
		x, y, ok := strings.Cut(f, ",")
		if !ok {
			t.Fatalf("bad point %q", f)
		}
		if _, err := fmt.Sscan(x, &p[0]); err != nil {
			t.Fatal(err)
		}
		if _, err := fmt.Sscan(y, &p[1]); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// chartPanels draws the sample's chart name and returns its SVG and its
// panels, which must number n.
func chartPanels(t *testing.T, name string, n int) ([]byte, []svgPanel) {
	t.Helper()
	data := sample().charts()[name]
	doc := parse(t, data)
	if len(doc.Panels) != n {
		t.Fatalf("%s: %d panels, want %d", name, len(doc.Panels), n)
	}
	return data, doc.Panels
}

func TestChartLatencyVsSize(t *testing.T) {
	data, panels := chartPanels(t, "latency-vs-size.svg", 1)
	p := panels[0]
	if len(p.Series) != 3 {
		t.Fatalf("%d series, want 3", len(p.Series))
	}
	want := []string{"bd-claim", "minimal claim program", "ready -n 1"}
	for i, s := range p.Series {
		if !strings.Contains(s.Name, want[i]) || s.Legend != s.Name {
			t.Errorf("series %d: name %q, legend %q; want %q in both", i, s.Name, s.Legend, want[i])
		}
		if len(s.Circles) != 3 {
			t.Fatalf("%s: %d points, want 3", s.Name, len(s.Circles))
		}
		// Sizes grow and so does every latency: x increases, and y (down the
		// picture) decreases.
		for j := 1; j < len(s.Circles); j++ {
			if s.Circles[j].CX <= s.Circles[j-1].CX || s.Circles[j].CY >= s.Circles[j-1].CY {
				t.Errorf("%s: point %d at (%v,%v) does not follow (%v,%v)", s.Name, j, s.Circles[j].CX, s.Circles[j].CY, s.Circles[j-1].CX, s.Circles[j-1].CY)
			}
		}
		// Log x: 1k, 10k, 100k are evenly spaced.
		if a, b := s.Circles[1].CX-s.Circles[0].CX, s.Circles[2].CX-s.Circles[1].CX; math.Abs(a-b) > 0.2 {
			t.Errorf("%s: decades %v and %v apart on a log axis", s.Name, a, b)
		}
	}
	// At each size bd ready is above bd-claim, which is above the minimal program.
	for j := range 3 {
		claimY, minY, bdY := p.Series[0].Circles[j].CY, p.Series[1].Circles[j].CY, p.Series[2].Circles[j].CY
		if !(bdY < claimY && claimY < minY) {
			t.Errorf("size %d: y of bd %v, bd-claim %v, minimal %v: not in that order from the top", j, bdY, claimY, minY)
		}
	}
	// Log y: the ratio 733.6/28 and 7100/72.4 map to distances in proportion to their logs.
	ys := p.Series[2].Circles
	cs := p.Series[0].Circles
	r1 := (cs[1].CY - ys[1].CY) / math.Log10(733.6/28.0)
	r2 := (cs[2].CY - ys[2].CY) / math.Log10(7100/72.4)
	if math.Abs(r1-r2) > 1 {
		t.Errorf("log y: %v vs %v units per decade", r1, r2)
	}
	for _, label := range []string{"1k", "10k", "100k"} {
		if !bytes.Contains(data, []byte(">"+label+"</text>")) {
			t.Errorf("no x tick %q", label)
		}
	}
}

func TestChartSwarm(t *testing.T) {
	data, panels := chartPanels(t, "swarm.svg", 2)
	lat, thr := panels[0], panels[1]
	names := func(p []svgSeries) (out []string) {
		for _, s := range p {
			out = append(out, s.Legend)
		}
		return out
	}
	if got := strings.Join(names(lat.Series), "|"); got != "p50|p99|fair-queue bound (N ÷ throughput)" {
		t.Errorf("latency legend %q", got)
	}
	if got := strings.Join(names(thr.Series), "|"); got != "claims/s|CPU-bound limit (cores ÷ CPU per process)" {
		t.Errorf("throughput legend %q", got)
	}
	// Reference lines are dashed and have no markers; measurements are solid.
	for _, s := range append(lat.Series, thr.Series...) {
		ref := strings.Contains(s.Name, "bound") || strings.Contains(s.Name, "limit")
		if (s.Polyline.Dash != "") != ref || (len(s.Circles) == 0) != ref {
			t.Errorf("%s: dash %q, %d markers", s.Name, s.Polyline.Dash, len(s.Circles))
		}
		pts := points(t, s.Polyline.Points)
		if len(pts) != 3 {
			t.Fatalf("%s: %d points", s.Name, len(pts))
		}
		for j := 1; j < len(pts); j++ {
			if pts[j][0] <= pts[j-1][0] {
				t.Errorf("%s: x not increasing: %v", s.Name, pts)
			}
		}
	}
	// Latency grows with the swarm; p99 lies above p50 at every shape.
	for j := 1; j < 3; j++ {
		if lat.Series[0].Circles[j].CY >= lat.Series[0].Circles[j-1].CY {
			t.Errorf("p50 not rising at shape %d", j)
		}
	}
	for j := range 3 {
		if lat.Series[1].Circles[j].CY >= lat.Series[0].Circles[j].CY {
			t.Errorf("shape %d: p99 not above p50", j)
		}
	}
	// Throughput stays under its CPU-bound limit.
	lim := points(t, thr.Series[1].Polyline.Points)
	for j, c := range thr.Series[0].Circles {
		if c.CY <= lim[j][1] {
			t.Errorf("shape %d: claims/s drawn at or above the limit", j)
		}
	}
	for _, label := range []string{"48×20", "128×10", "256×4"} {
		if !strings.Contains(string(data), ">"+label+"</text>") {
			t.Errorf("no x tick %q", label)
		}
	}
}

// Only what a run measured is drawn: a -quick run has no 100k workspace.
func TestChartSkipsUnmeasured(t *testing.T) {
	d := &chartData{}
	d.cliCharts(cliResult{
		"claim-1k":     {samples: []time.Duration{20 * time.Millisecond}},
		"claim-10k":    {samples: []time.Duration{28 * time.Millisecond}},
		"minclaim-10k": {samples: []time.Duration{25 * time.Millisecond}},
	})
	if len(d.latency) != 2 || len(d.latency[0].points) != 2 || len(d.latency[1].points) != 1 {
		t.Fatalf("latency series %+v", d.latency)
	}
	charts := d.charts()
	if _, ok := charts["swarm.svg"]; ok {
		t.Error("a swarm chart without swarm figures")
	}
	doc := parse(t, charts["latency-vs-size.svg"])
	if n := len(doc.Panels[0].Series); n != 2 {
		t.Errorf("%d series drawn, want 2", n)
	}
	if empty := (&chartData{}).charts(); len(empty) != 0 {
		t.Errorf("charts without data: %v", empty)
	}
}

// -write makes the chart directory and links the charts from the page.
func TestWriteCharts(t *testing.T) {
	dir := t.TempDir()
	md, err := sample().writeCharts(filepath.Join(dir, "BENCHMARKS.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"latency-vs-size.svg", "swarm.svg"} {
		data, err := os.ReadFile(filepath.Join(dir, chartDir, f))
		if err != nil {
			t.Fatal(err)
		}
		wellFormed(t, data)
		if !strings.Contains(md, "]("+chartDir+"/"+f+")") {
			t.Errorf("no image link to %s in %q", f, md)
		}
	}
	if os.Getenv("BENCH_CHART_DIR") != "" { // to look at them: BENCH_CHART_DIR=/tmp/x go test -run TestWriteCharts ./scripts/bench
		if _, err := sample().writeCharts(filepath.Join(os.Getenv("BENCH_CHART_DIR"), "BENCHMARKS.md")); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTicks(t *testing.T) {
	for _, c := range []struct {
		s    scale
		want string
	}{
		{scale{10, 10000, true}, "10 100 1k 10k"},
		{scale{10, 1000, true}, "10 20 50 100 200 500 1k"},
		{scale{0, 6, false}, "0 2 4 6"},
		{scale{0, 70, false}, "0 20 40 60"},
	} {
		var got []string
		for _, tk := range c.s.ticks() {
			got = append(got, tk.label)
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("%+v: ticks %q, want %q", c.s, strings.Join(got, " "), c.want)
		}
	}
}
