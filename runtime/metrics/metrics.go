// Package metrics serves a running script's maps to Prometheus: at each
// scrape it reads the maps as they are then (through a function the
// runtime gives it) and writes them in the Prometheus and OpenMetrics text
// formats. docs/metrics.md says how each kind of map becomes a metric.
//
// It writes the formats itself rather than with the Prometheus client
// library: that library and the protobuf runtime it needs cost every
// gotrace run ~6 ms and ~4 MiB of start-up in package initialisers,
// though only --metrics uses them (issue 24). For the same reason it
// links no HTTP server: the network side (HTTP, TLS, basic auth) runs in
// the gotrace-metrics process (runtime/metrics/webserver), which asks
// this package for each scrape over a socket (link.go).
package metrics

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/gotrace/gotrace/codegen/layout"
	"github.com/gotrace/gotrace/runtime/output"
)

// Prefix starts the name of every metric gotrace serves.
const Prefix = "gotrace_"

// DefaultMaxSeries is how many series one map may make at one scrape by
// default: a map keyed by something unbounded (addresses, stacks) must not
// flood the monitoring system.
const DefaultMaxSeries = 10000

// Config says how maps are named and labelled.
type Config struct {
	// Names maps a script map ("@msgs") to the metric name to use instead
	// of its own (Prefix is still put before it).
	Names map[string]string
	// Labels maps a script map to the names of its key's labels, one per
	// key element; the default is "key" for a single key and key0, key1,
	// ... for several.
	Labels map[string][]string
	// MaxSeries caps the series of one map at one scrape (0: the
	// default); the rest are counted in gotrace_series_dropped.
	MaxSeries int
}

// ReadMaps reads every map of the script as it is now.
type ReadMaps func() ([]*output.Map, error)

// Collector turns a script's maps into metric families at each scrape.
// Until SetSource is called it collects nothing.
type Collector struct {
	cfg Config

	mu   sync.Mutex
	read ReadMaps
}

// NewCollector returns a Collector with the configuration cfg, which
// Validate has accepted.
func NewCollector(cfg Config) *Collector {
	if cfg.MaxSeries <= 0 {
		cfg.MaxSeries = DefaultMaxSeries
	}
	return &Collector{cfg: cfg}
}

// Config returns the collector's configuration.
func (c *Collector) Config() Config { return c.cfg }

// SetSource sets the function that reads the maps at each scrape; nil
// stops collecting (the maps are gone once the trace ends).
func (c *Collector) SetSource(read ReadMaps) {
	c.mu.Lock()
	c.read = read
	c.mu.Unlock()
}

// collect reads the maps and returns their metric families, sorted by
// name. A map whose family would clash with one already served (the same
// name, or one of the _sum, _count or _bucket series of another) is left
// out, as is a map whose keys do not fit its configured labels.
func (c *Collector) collect() []*family {
	c.mu.Lock()
	read := c.read
	c.mu.Unlock()
	if read == nil {
		return nil
	}
	maps, err := read()
	if err != nil {
		return []*family{{name: Prefix + "maps_unreadable", help: "1 when the script's maps could not be read for this scrape.", kind: gauge,
			series: []series{{value: 1}}}}
	}
	var fams familySet
	dropped := &family{name: Prefix + "series_dropped", kind: gauge,
		help: "Series of a map left out of this scrape because the map had more than the cap (--metrics-max-series)."}
	for _, m := range maps {
		mapFams, n := c.mapFamilies(m)
		for _, f := range mapFams {
			fams.add(f)
		}
		if n > 0 {
			dropped.series = append(dropped.series, series{labels: []label{{"map", m.Name}}, value: float64(n)})
		}
	}
	fams.add(dropped)
	return fams.sorted()
}

// Exportable reports whether a map of kind k with values laid out as
// value can be a metric: aggregations always, assigned values only when
// they are integers.
func Exportable(k layout.MapKind, value layout.Field) bool {
	return k != layout.MapValue || value.Kind == layout.Int || value.Kind == layout.Pointer
}

// MetricName returns the name of the metric of a script map under cfg,
// without the _total or other suffix a counter or summary gets.
func (cfg Config) MetricName(mapName string) string {
	if n, ok := cfg.Names[mapName]; ok {
		return Prefix + n
	}
	name := strings.TrimPrefix(mapName, "@")
	if name == "" {
		name = "map"
	}
	return Prefix + strings.Map(func(r rune) rune {
		if isNameChar(r) {
			return r
		}
		return '_'
	}, name)
}

// isNameChar reports whether r may stand in a metric or label name.
func isNameChar(r rune) bool {
	return r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

// validName reports whether s is a metric or label name of the form
// Prometheus recommends.
func validName(s string) bool {
	return s != "" && !(s[0] >= '0' && s[0] <= '9') && strings.IndexFunc(s, func(r rune) bool { return !isNameChar(r) }) < 0
}

// Validate checks the names cfg gives.
func (cfg Config) Validate() error {
	for m, n := range cfg.Names {
		if !validName(n) || strings.HasPrefix(n, "__") {
			return fmt.Errorf("metric name %q for %s: want letters, digits and _, not starting with a digit or __", n, m)
		}
	}
	for m, ls := range cfg.Labels {
		seen := map[string]bool{}
		for _, l := range ls {
			if !validName(l) || strings.HasPrefix(l, "__") || l == "le" || l == "quantile" {
				return fmt.Errorf("label name %q for %s: want letters, digits and _, not starting with a digit or __, and not le or quantile", l, m)
			}
			if seen[l] {
				return fmt.Errorf("label name %q given twice for %s", l, m)
			}
			seen[l] = true
		}
	}
	return nil
}

// labelNames returns the label names of a map whose keys have n elements.
func (c *Collector) labelNames(mapName string, n int) ([]string, error) {
	if names, ok := c.cfg.Labels[mapName]; ok {
		if len(names) != n {
			return nil, fmt.Errorf("%d label names given for %s, whose keys have %d elements", len(names), mapName, n)
		}
		return names, nil
	}
	switch n {
	case 0:
		return nil, nil
	case 1:
		return []string{"key"}, nil
	}
	names := make([]string, n)
	for i := range names {
		names[i] = "key" + strconv.Itoa(i)
	}
	return names, nil
}

// mapFamilies converts one map into metric families, with at most
// MaxSeries series (a histogram's buckets are one series here), and says
// how many it left out.
func (c *Collector) mapFamilies(m *output.Map) (fams []*family, dropped int) {
	all := m.AllEntries()
	if len(all) == 0 {
		return nil, 0
	}
	labelNames, err := c.labelNames(m.Name, len(all[0].Key))
	if err != nil {
		return nil, 0
	}
	name := c.cfg.MetricName(m.Name)
	help := fmt.Sprintf("The map %s of the gotrace script.", m.Name)
	// A stable order, so that the series kept under the cap are the same
	// from one scrape to the next while the keys stay.
	entries := slices.Clone(all)
	slices.SortFunc(entries, func(a, b output.Entry) int { return compareKeys(a.Key, b.Key) })
	if len(entries) > c.cfg.MaxSeries {
		dropped = len(entries) - c.cfg.MaxSeries
		entries = entries[:c.cfg.MaxSeries]
	}
	f := &family{name: name, help: help, kind: gauge}
	var avg *family
	switch m.Kind {
	case layout.MapCount, layout.MapSum:
		f.name, f.kind = name+"_total", counter
	case layout.MapAvg, layout.MapStats:
		f.help, f.kind = help+" Its _count and _sum are the values' number and total.", summary
		avg = &family{name: name + "_avg", help: help + " The average of its values.", kind: gauge}
	case layout.MapHist, layout.MapLhist:
		f.kind = histogram
	}
	for _, e := range entries {
		s := series{labels: makeLabels(labelNames, e.Key)}
		switch m.Kind {
		case layout.MapCount:
			s.value = float64(e.Value.Bits)
		case layout.MapAvg, layout.MapStats:
			s.count, s.sum = e.Count, float64(e.Total)
			if e.Count > 0 {
				avg.series = append(avg.series, series{labels: s.labels, value: float64(e.Total / int64(e.Count))})
			}
		case layout.MapHist, layout.MapLhist:
			s.count, s.sum, s.buckets = histogramOf(m, e)
		default:
			s.value = intValue(e.Value)
		}
		f.series = append(f.series, s)
	}
	if avg != nil {
		return []*family{f, avg}, dropped
	}
	return []*family{f}, dropped
}

// intValue is an integer value as a float.
func intValue(v output.Value) float64 {
	if v.Signed {
		return float64(int64(v.Bits))
	}
	return float64(v.Bits)
}

// histogramOf turns a hist or lhist entry into Prometheus' form: the count,
// an estimate of the sum (each bucket's count times the middle of its
// range; the two open-ended buckets count at their one bound), and the
// cumulative counts of values at most each bucket's upper bound, for every
// bucket up to the last non-empty one, in increasing order (le="+Inf" is
// the count).
func histogramOf(m *output.Map, e output.Entry) (count uint64, sum float64, buckets []bucket) {
	last := -1
	for i, n := range e.Buckets {
		if n != 0 {
			last = i
		}
	}
	for i := 0; i <= last; i++ {
		n := e.Buckets[i]
		lo, hi := BucketRange(m, i)
		count += n
		switch {
		case math.IsInf(lo, -1):
			sum += float64(n) * hi
		case math.IsInf(hi, 1):
			sum += float64(n) * lo
		default:
			sum += float64(n) * (lo + hi) / 2
		}
		// hist's bucket of negative values appears only once it counts
		// something, as bpftrace prints it.
		if !math.IsInf(hi, 1) && (i > 0 || n > 0 || m.Kind == layout.MapLhist) {
			buckets = append(buckets, bucket{le: hi, count: count})
		}
	}
	return count, sum, buckets
}

// BucketRange returns the inclusive bounds of bucket i of a hist or lhist
// map as numbers, -Inf and +Inf for the open ends.
func BucketRange(m *output.Map, i int) (lo, hi float64) {
	min, max := output.BucketRange(m, i)
	lo, hi = math.Inf(-1), math.Inf(1)
	if min != "" {
		lo, _ = strconv.ParseFloat(min, 64)
	}
	if max != "" {
		hi, _ = strconv.ParseFloat(max, 64)
	}
	return lo, hi
}

// makeLabels pairs the label names with a key's elements, sorted by name
// as the exposition lists them. The values are the elements as bpftrace
// prints them in text, with bytes that are not UTF-8 written as \xNN,
// which Prometheus requires.
func makeLabels(names []string, key []output.Value) []label {
	labels := make([]label, len(key))
	for i, v := range key {
		labels[i] = label{names[i], validUTF8(v.String())}
	}
	slices.SortFunc(labels, func(a, b label) int { return strings.Compare(a.name, b.name) })
	return labels
}

func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			fmt.Fprintf(&b, `\x%02x`, s[i])
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// compareKeys orders keys element by element, integers by value and the
// rest by their text.
func compareKeys(a, b []output.Value) int {
	for i := range min(len(a), len(b)) {
		x, y := a[i], b[i]
		var c int
		if x.Kind == output.ValueInt && y.Kind == output.ValueInt {
			c = cmp.Compare(intValue(x), intValue(y))
		} else {
			c = strings.Compare(x.String(), y.String())
		}
		if c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}
