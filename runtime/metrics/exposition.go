package metrics

import (
	"bufio"
	"bytes"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// kind is a metric family's Prometheus type.
type kind string

// The types gotrace serves.
const (
	counter   kind = "counter"
	gauge     kind = "gauge"
	summary   kind = "summary"
	histogram kind = "histogram"
)

// family is one metric family: its name (a counter's ends in _total), help
// text, type and series.
type family struct {
	name, help string
	kind       kind
	series     []series
}

// series is one labelled series of a family: value for counters and
// gauges; count, sum and (histograms) the cumulative buckets otherwise.
type series struct {
	labels  []label
	value   float64
	count   uint64
	sum     float64
	buckets []bucket
}

// label is one label of a series.
type label struct{ name, value string }

// bucket is a histogram's cumulative count of the values at most le.
type bucket struct {
	le    float64
	count uint64
}

// sampleNames returns the names of the lines f writes: its own for a
// counter or gauge, name_sum and name_count (and name_bucket) otherwise.
func (f *family) sampleNames() []string {
	switch f.kind {
	case summary:
		return []string{f.name, f.name + "_sum", f.name + "_count"}
	case histogram:
		return []string{f.name, f.name + "_sum", f.name + "_count", f.name + "_bucket"}
	}
	return []string{f.name}
}

// familySet gathers the families of a scrape, refusing any whose lines
// would be mistaken for another's, as Prometheus' registry does.
type familySet struct {
	fams  []*family
	taken map[string]bool
}

// add adds f unless it has no series or a name of its lines is taken.
func (s *familySet) add(f *family) {
	if len(f.series) == 0 {
		return
	}
	names := f.sampleNames()
	for _, n := range names {
		if s.taken[n] {
			return
		}
	}
	if s.taken == nil {
		s.taken = map[string]bool{}
	}
	for _, n := range names {
		s.taken[n] = true
	}
	s.fams = append(s.fams, f)
}

// sorted returns the families by name, each one's series ordered by their
// label values and without a second series of the same labels.
func (s *familySet) sorted() []*family {
	slices.SortFunc(s.fams, func(a, b *family) int { return strings.Compare(a.name, b.name) })
	for _, f := range s.fams {
		slices.SortStableFunc(f.series, func(a, b series) int { return compareLabels(a.labels, b.labels) })
		f.series = slices.CompactFunc(f.series, func(a, b series) bool { return compareLabels(a.labels, b.labels) == 0 })
	}
	return s.fams
}

// compareLabels orders two series of a family (whose labels have the same
// names, sorted) by their label values.
func compareLabels(a, b []label) int {
	for i := range min(len(a), len(b)) {
		if c := strings.Compare(a[i].value, b[i].value); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

// format is one of the two exposition formats.
type format struct {
	contentType string
	// openMetrics: counters' HELP and TYPE name without _total, floats
	// always with a decimal point or exponent, counts as integers, the
	// quote escaped in help text, and a final "# EOF".
	openMetrics bool
}

var (
	textFormat        = format{contentType: "text/plain; version=0.0.4; charset=utf-8"}
	openMetricsFormat = format{contentType: "application/openmetrics-text; version=1.0.0; charset=utf-8", openMetrics: true}
)

// write writes the families in the format.
func (ft format) write(w io.Writer, fams []*family) error {
	b := bufio.NewWriter(w)
	for _, f := range fams {
		name := f.name
		if ft.openMetrics && f.kind == counter {
			name = strings.TrimSuffix(name, "_total")
		}
		b.WriteString("# HELP " + name + " ")
		ft.escape(b, f.help, ft.openMetrics)
		b.WriteString("\n# TYPE " + name + " " + string(f.kind) + "\n")
		for _, s := range f.series {
			switch f.kind {
			case counter, gauge:
				ft.sample(b, f.name, s.labels, nil, ft.float(s.value))
			case summary, histogram:
				for _, bk := range s.buckets {
					ft.sample(b, f.name+"_bucket", s.labels, &bk.le, ft.count(bk.count))
				}
				if f.kind == histogram {
					inf := math.Inf(1)
					ft.sample(b, f.name+"_bucket", s.labels, &inf, ft.count(s.count))
				}
				ft.sample(b, f.name+"_sum", s.labels, nil, ft.float(s.sum))
				ft.sample(b, f.name+"_count", s.labels, nil, ft.count(s.count))
			}
		}
	}
	if ft.openMetrics {
		b.WriteString("# EOF\n")
	}
	return b.Flush()
}

// sample writes one line: the name, the labels (with le last when given)
// and the value.
func (ft format) sample(b *bufio.Writer, name string, labels []label, le *float64, value string) {
	b.WriteString(name)
	if len(labels) > 0 || le != nil {
		sep := byte('{')
		for _, l := range labels {
			b.WriteByte(sep)
			b.WriteString(l.name + `="`)
			ft.escape(b, l.value, true)
			b.WriteByte('"')
			sep = ','
		}
		if le != nil {
			b.WriteByte(sep)
			b.WriteString(`le="` + ft.float(*le) + `"`)
		}
		b.WriteByte('}')
	}
	b.WriteString(" " + value + "\n")
}

// float formats a value as the client library does: the shortest form
// that reads back exactly, with the infinities as +Inf and -Inf.
func (ft format) float(f float64) string {
	var s string
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	case math.IsNaN(f):
		return "NaN"
	case f == 0:
		s = "0" // and not -0
	default:
		s = strconv.FormatFloat(f, 'g', -1, 64)
	}
	if ft.openMetrics && !strings.ContainsAny(s, "e.") {
		s += ".0"
	}
	return s
}

// count formats a count: an integer in OpenMetrics, a float in the text
// format (1e+06 for a million).
func (ft format) count(n uint64) string {
	if ft.openMetrics {
		return strconv.FormatUint(n, 10)
	}
	return ft.float(float64(n))
}

// escape writes s with backslashes and newlines escaped, and quotes too
// when quote is set (label values; OpenMetrics help text).
func (format) escape(b *bufio.Writer, s string, quote bool) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b.WriteString(`\\`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '"' && quote:
			b.WriteString(`\"`)
		default:
			b.WriteByte(c)
		}
	}
}

// negotiate picks the format a request's Accept header prefers:
// OpenMetrics when it rates that above Prometheus' text format, which is
// the default.
func negotiate(accept string) format {
	om, text := -1.0, 0.0
	for _, r := range strings.Split(accept, ",") {
		mediaType, params, _ := strings.Cut(r, ";")
		q := 1.0
		for p := range strings.SplitSeq(params, ";") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(p), "q="); ok {
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					q = f
				}
			}
		}
		switch strings.ToLower(strings.TrimSpace(mediaType)) {
		case "application/openmetrics-text":
			om = max(om, q)
		case "text/plain":
			text = max(text, q)
		}
	}
	if om > 0 && om >= text {
		return openMetricsFormat
	}
	return textFormat
}

// Scrape collects the maps now and writes them in the format the Accept
// header accept prefers, returning the body and its content type.
func (c *Collector) Scrape(accept string) (contentType string, body []byte) {
	ft := negotiate(accept)
	var b bytes.Buffer
	// A bytes.Buffer does not fail.
	_ = ft.write(&b, c.collect())
	return ft.contentType, b.Bytes()
}
