package main

// The charts that -write draws next to BENCHMARKS.md: a small line-chart
// writer (axes, ticks, linear or log scales, series with a legend, dashed
// reference series) and the two charts made from a run's figures.

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// point is one measured value.
type point struct{ x, y float64 }

// series is one line of a chart; a dashed one is a reference (a bound, a
// limit) rather than a measurement.
type series struct {
	name   string
	points []point
	dashed bool
}

// tick is one labelled mark of an axis.
type tick struct {
	v     float64
	label string
}

// chart is one panel: its axes and series.
type chart struct {
	title          string
	xLabel, yLabel string
	xLog, yLog     bool
	xTicks         []tick // nil: chosen from the data
	series         []series
}

// The geometry of a panel, in SVG user units.
const (
	panelW, plotH             = 460.0, 260.0
	marginL, marginR, marginT = 64.0, 16.0, 36.0
	axisH, legendRow          = 48.0, 18.0
)

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"}

// scale maps a value of one axis to a fraction of its length, 0 to 1.
type scale struct {
	lo, hi float64
	log    bool
}

func (s scale) frac(v float64) float64 {
	if s.log {
		return (math.Log10(v) - math.Log10(s.lo)) / (math.Log10(s.hi) - math.Log10(s.lo))
	}
	return (v - s.lo) / (s.hi - s.lo)
}

// domain is the range of the values vs, widened to whole decades on a log
// y axis and to 0 and a round maximum on a linear one; an x axis gets 5%
// of its range on either side, so that no point sits on the frame.
func domain(vs []float64, log, isX bool) scale {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		if log && v <= 0 {
			continue
		}
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	switch {
	case math.IsInf(lo, 1): // no values
		if log {
			return scale{1, 10, true}
		}
		return scale{0, 1, false}
	case log && isX:
		pad := math.Max(0.1, (math.Log10(hi)-math.Log10(lo))*0.05)
		return scale{lo / math.Pow(10, pad), hi * math.Pow(10, pad), true}
	case log:
		l, h := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
		if h == l {
			h++
		}
		return scale{math.Pow(10, l), math.Pow(10, h), true}
	case isX:
		pad := (hi - lo) * 0.05
		if pad == 0 {
			pad = math.Max(1, math.Abs(lo)*0.05)
		}
		return scale{lo - pad, hi + pad, false}
	default:
		lo = math.Min(0, lo)
		if hi <= lo {
			hi = lo + 1
		}
		step := niceStep((hi - lo) / 5)
		return scale{lo, math.Ceil(hi/step) * step, false}
	}
}

// niceStep is 1, 2 or 5 times a power of ten, at least raw.
func niceStep(raw float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// ticks are the marks of an axis of scale s: the decades (and 2 and 5
// times them when there are fewer than three) on a log scale, about five
// round steps on a linear one.
func (s scale) ticks() []tick {
	var ts []tick
	if s.log {
		decades := math.Log10(s.hi) - math.Log10(s.lo)
		for d := math.Log10(s.lo); d <= math.Log10(s.hi)+1e-9; d++ {
			for _, m := range []float64{1, 2, 5} {
				v := m * math.Pow(10, d)
				if (m == 1 || decades < 3) && v <= s.hi*(1+1e-9) {
					ts = append(ts, tick{v, number(v)})
				}
			}
		}
		return ts
	}
	step := niceStep((s.hi - s.lo) / 5)
	for v := math.Ceil(s.lo/step) * step; v <= s.hi+step*1e-9; v += step {
		ts = append(ts, tick{v, number(v)})
	}
	return ts
}

// number writes a tick's value: 1k for 1000, 0.5 for 0.5.
func number(v float64) string {
	switch {
	case v >= 1e6 && math.Mod(v, 1e6) == 0:
		return fmt.Sprintf("%.0fM", v/1e6)
	case v >= 1e3 && math.Mod(v, 1e3) == 0:
		return fmt.Sprintf("%.0fk", v/1e3)
	}
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
}

// esc is s escaped for XML text and attribute values.
func esc(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// height is the panel's height with its legend.
func (c *chart) height() float64 {
	return marginT + plotH + axisH + legendRow*float64(len(c.series))
}

// render writes the panel at horizontal offset x0 of the picture.
func (c *chart) render(w *bytes.Buffer, x0 float64) {
	var xs, ys []float64
	for _, s := range c.series {
		for _, p := range s.points {
			xs, ys = append(xs, p.x), append(ys, p.y)
		}
	}
	for _, t := range c.xTicks {
		xs = append(xs, t.v)
	}
	sx, sy := domain(xs, c.xLog, true), domain(ys, c.yLog, false)
	left, top := x0+marginL, marginT
	width := panelW - marginL - marginR
	px := func(v float64) float64 { return left + sx.frac(v)*width }
	py := func(v float64) float64 { return top + (1-sy.frac(v))*plotH }

	fmt.Fprintf(w, "<g class=\"panel\">\n<text x=\"%.1f\" y=\"20\" font-size=\"14\" font-weight=\"bold\">%s</text>\n", left, esc(c.title))
	fmt.Fprintf(w, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#888\"/>\n", left, top, width, plotH)
	xt := c.xTicks
	if xt == nil {
		xt = sx.ticks()
	}
	for _, t := range xt {
		x := px(t.v)
		fmt.Fprintf(w, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", x, top, x, top+plotH)
		fmt.Fprintf(w, "<text class=\"xtick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", x, top+plotH+16, esc(t.label))
	}
	for _, t := range sy.ticks() {
		y := py(t.v)
		fmt.Fprintf(w, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", left, y, left+width, y)
		fmt.Fprintf(w, "<text class=\"ytick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", left-6, y+4, esc(t.label))
	}
	fmt.Fprintf(w, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", left+width/2, top+plotH+36, esc(c.xLabel))
	fmt.Fprintf(w, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 %.1f %.1f)\">%s</text>\n",
		x0+16, top+plotH/2, x0+16, top+plotH/2, esc(c.yLabel))
	for i, s := range c.series {
		color := palette[i%len(palette)]
		dash := ""
		if s.dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		fmt.Fprintf(w, "<g class=\"series\" data-name=\"%s\">\n", esc(s.name))
		var pts []string
		for _, p := range s.points {
			if (c.xLog && p.x <= 0) || (c.yLog && p.y <= 0) {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p.x), py(p.y)))
		}
		fmt.Fprintf(w, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"%s\"/>\n", color, dash, strings.Join(pts, " "))
		if !s.dashed {
			for _, p := range s.points {
				if (c.xLog && p.x <= 0) || (c.yLog && p.y <= 0) {
					continue
				}
				fmt.Fprintf(w, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"><title>%s: %s</title></circle>\n",
					px(p.x), py(p.y), color, esc(s.name), number(math.Round(p.y*100)/100))
			}
		}
		ly := top + plotH + axisH + legendRow*float64(i) + 4
		fmt.Fprintf(w, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"%s/>\n", left, ly, left+24, ly, color, dash)
		fmt.Fprintf(w, "<text class=\"legend\" x=\"%.1f\" y=\"%.1f\">%s</text>\n</g>\n", left+30, ly+4, esc(s.name))
	}
	w.WriteString("</g>\n")
}

// svg draws the panels side by side in one picture.
func svg(panels ...*chart) []byte {
	h := 0.0
	for _, c := range panels {
		h = math.Max(h, c.height())
	}
	var w bytes.Buffer
	fmt.Fprintf(&w, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
		panelW*float64(len(panels)), h, panelW*float64(len(panels)), h)
	fmt.Fprintf(&w, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n")
	for i, c := range panels {
		c.render(&w, panelW*float64(i))
	}
	w.WriteString("</svg>\n")
	return w.Bytes()
}

// chartData is what a run measured for the charts.
type chartData struct {
	// latency: a program's median claim (or list) time, ms, by workspace size.
	latency []series
	// shapes: the 3b swarms, in the order run.
	shapes []shapePoint
}

// shapePoint is one 3b swarm of bd-claim.
type shapePoint struct {
	n, k                int
	p50, p99, bound     time.Duration
	rate, cpuBoundLimit float64
}

// cliCharts keeps the CLI loop's medians by workspace size: bd-claim, the
// minimal claim program and bd ready -n 1 (the sizes a run measured).
func (d *chartData) cliCharts(res cliResult) {
	for _, prog := range []struct{ name, prefix string }{
		{"bd-claim --agent A (a claim)", "claim-"},
		{"minimal claim program (scripts/bench/minclaim)", "minclaim-"},
		{"bd " + bdVersion + " ready -n 1 --json (a list, no claim)", "bd-ready-"},
	} {
		s := series{name: prog.name}
		for _, size := range []struct {
			name string
			n    float64
		}{{"1k", sizeSmall}, {"10k", sizeMid}, {"100k", sizeBig}} {
			name := prog.prefix + size.name
			if name == "bd-ready-10k" {
				name = "bd-ready" // the table's probe
			}
			if p := res[name]; p != nil && len(p.samples) > 0 {
				s.points = append(s.points, point{size.n, float64(median(p.samples)) / 1e6})
			}
		}
		if len(s.points) > 0 {
			d.latency = append(d.latency, s)
		}
	}
}

// charts are the pictures of d, by file name.
func (d *chartData) charts() map[string][]byte {
	out := map[string][]byte{}
	if len(d.latency) > 0 {
		out["latency-vs-size.svg"] = svg(&chart{
			title:  "One claim process, end to end (median)",
			xLabel: "issues in the workspace", yLabel: "ms (log scale)",
			xLog: true, yLog: true,
			xTicks: []tick{{sizeSmall, "1k"}, {sizeMid, "10k"}, {sizeBig, "100k"}},
			series: d.latency,
		})
	}
	if len(d.shapes) > 0 {
		var xt []tick
		p50, p99, bound := series{name: "p50"}, series{name: "p99"}, series{name: "fair-queue bound (N ÷ throughput)", dashed: true}
		rate, limit := series{name: "claims/s"}, series{name: "CPU-bound limit (cores ÷ CPU per process)", dashed: true}
		for _, s := range d.shapes {
			x := float64(s.n)
			xt = append(xt, tick{x, fmt.Sprintf("%d×%d", s.n, s.k)})
			p50.points = append(p50.points, point{x, s.p50.Seconds()})
			p99.points = append(p99.points, point{x, s.p99.Seconds()})
			bound.points = append(bound.points, point{x, s.bound.Seconds()})
			rate.points = append(rate.points, point{x, s.rate})
			limit.points = append(limit.points, point{x, s.cpuBoundLimit})
		}
		out["swarm.svg"] = svg(
			&chart{title: "Swarm: latency of a claim", xLabel: "processes × claims each", yLabel: "seconds",
				xTicks: xt, series: []series{p50, p99, bound}},
			&chart{title: "Swarm: throughput", xLabel: "processes × claims each", yLabel: "claims/s",
				xTicks: xt, series: []series{rate, limit}},
		)
	}
	return out
}

// chartDir is where -write puts the charts, relative to BENCHMARKS.md.
const chartDir = "docs/bench"

// writeCharts writes d's charts under chartDir next to the page at
// outPath, making the directory, and returns the Markdown that shows them.
func (d *chartData) writeCharts(outPath string) (string, error) {
	charts := d.charts()
	if len(charts) == 0 {
		return "", nil
	}
	dir := filepath.Join(filepath.Dir(outPath), chartDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	var md strings.Builder
	md.WriteString("\n## Charts\n\n")
	for _, c := range []struct{ file, alt string }{
		{"latency-vs-size.svg", "one claim's median latency against workspace size: bd-claim, the minimal claim program, bd ready"},
		{"swarm.svg", "swarm latency (p50, p99) and throughput against the number of processes, with the fair-queue bound and the CPU-bound limit"},
	} {
		data, ok := charts[c.file]
		if !ok {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, c.file), data, 0o644); err != nil {
			return "", err
		}
		logf("wrote %s", filepath.Join(dir, c.file))
		fmt.Fprintf(&md, "![%s](%s/%s)\n\n", c.alt, chartDir, c.file)
	}
	return md.String(), nil
}
