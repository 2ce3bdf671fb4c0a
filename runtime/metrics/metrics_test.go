package metrics

import (
	"bytes"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gotrace/gotrace/codegen/layout"
	"github.com/gotrace/gotrace/internal/golden"
	"github.com/gotrace/gotrace/runtime/output"
)

func str(s string) output.Value { return output.Value{Kind: output.ValueString, Str: s} }

// hist buckets: 0 negative, 1 zero, k+2 for [2^k, 2^(k+1)).
var mapsByKind = map[string][]*output.Map{
	"count": {{Name: "@msgs", Kind: layout.MapCount, Entries: []output.Entry{
		{Key: []output.Value{str("ping")}, Value: output.Uint(12)},
		{Key: []output.Value{str("inv")}, Value: output.Uint(32)},
	}}},
	"count_nokey": {{Name: "@", Kind: layout.MapCount, Entries: []output.Entry{{Value: output.Uint(7)}}}},
	"sum_tuple": {{Name: "@bytes", Kind: layout.MapSum, Entries: []output.Entry{
		{Key: []output.Value{output.Int(1), str("tx")}, Value: output.Int(300)},
		{Key: []output.Value{output.Int(0), str("tx")}, Value: output.Int(250)},
	}}},
	"gauges": {
		{Name: "@max", Kind: layout.MapMax, Entries: []output.Entry{{Key: []output.Value{str("a")}, Value: output.Int(-5)}}},
		{Name: "@last", Kind: layout.MapValue, Entries: []output.Entry{{Value: output.Uint(42)}}},
	},
	"stats": {{Name: "@lat", Kind: layout.MapStats, Entries: []output.Entry{
		{Key: []output.Value{str("getdata")}, Count: 4, Total: 10},
	}}},
	"hist": {{Name: "@size", Kind: layout.MapHist, Entries: []output.Entry{
		{Key: []output.Value{str("pos")}, Buckets: []uint64{0, 1, 2, 0, 3}},
		{Key: []output.Value{str("neg")}, Buckets: []uint64{2, 0, 1}},
	}}},
	"lhist": {{Name: "@l", Kind: layout.MapLhist, Lhist: layout.Lhist{Min: 0, Max: 300, Step: 100}, Entries: []output.Entry{
		{Buckets: []uint64{1, 2, 0, 4, 5}},
	}}},
	"label_escapes": {{Name: "@stack", Kind: layout.MapCount, Entries: []output.Entry{
		{Key: []output.Value{str("\n\tmain+4\n\t\"x\"\\y\xff\n")}, Value: output.Uint(1)},
	}}},
}

// gather serves maps through a Collector and returns the exposition in
// Prometheus' text format.
func gather(t *testing.T, cfg Config, maps []*output.Map) string {
	t.Helper()
	return expose(t, textFormat, cfg, maps)
}

// expose serves maps through a Collector and returns the exposition in
// the format ft.
func expose(t *testing.T, ft format, cfg Config, maps []*output.Map) string {
	t.Helper()
	c := NewCollector(cfg)
	c.SetSource(func() ([]*output.Map, error) { return maps, nil })
	var b bytes.Buffer
	if err := ft.write(&b, c.collect()); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestGolden compares the exposition of every map kind with
// testdata/NAME.txt (written by the Prometheus client library when gotrace
// used it), parses it back with the client library's parser, and checks
// that the OpenMetrics exposition is what the library writes for the
// families it parsed.
func TestGolden(t *testing.T) {
	for name, ms := range mapsByKind {
		t.Run(name, func(t *testing.T) {
			cfg := Config{}
			if name == "sum_tuple" {
				cfg.Labels = map[string][]string{"@bytes": {"peer", "command"}}
			}
			got := gather(t, cfg, ms)
			golden.Compare(t, filepath.Join("testdata", name+".txt"), []byte(got))
			parser := expfmt.NewTextParser(model.UTF8Validation)
			families, err := parser.TextToMetricFamilies(strings.NewReader(got))
			if err != nil {
				t.Fatalf("the client library cannot parse it back: %v", err)
			}
			var wantOM bytes.Buffer
			for _, name := range slices.Sorted(maps.Keys(families)) {
				if _, err := expfmt.MetricFamilyToOpenMetrics(&wantOM, families[name]); err != nil {
					t.Fatal(err)
				}
			}
			expfmt.FinalizeOpenMetrics(&wantOM)
			if om := expose(t, openMetricsFormat, cfg, ms); om != wantOM.String() {
				t.Errorf("OpenMetrics exposition:\n%s\nthe client library's:\n%s", om, wantOM.String())
			}
		})
	}
}

// TestMaxSeries keeps the first keys in order and counts the rest.
func TestMaxSeries(t *testing.T) {
	m := &output.Map{Name: "@wild", Kind: layout.MapCount}
	for i := range 5 {
		m.Entries = append(m.Entries, output.Entry{Key: []output.Value{output.Int(int64(4 - i))}, Value: output.Uint(1)})
	}
	got := gather(t, Config{MaxSeries: 2}, []*output.Map{m})
	for _, want := range []string{`gotrace_wild_total{key="0"} 1`, `gotrace_wild_total{key="1"} 1`, `gotrace_series_dropped{map="@wild"} 3`} {
		if !strings.Contains(got, want) {
			t.Errorf("exposition lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, `key="2"`) {
		t.Errorf("a series over the cap was served:\n%s", got)
	}
}

func TestConfig(t *testing.T) {
	for _, bad := range []Config{
		{Names: map[string]string{"@a": "1x"}},
		{Names: map[string]string{"@a": "a-b"}},
		{Labels: map[string][]string{"@a": {"le"}}},
		{Labels: map[string][]string{"@a": {"x", "x"}}},
		{Labels: map[string][]string{"@a": {"__x"}}},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v: accepted", bad)
		}
	}
	cfg := Config{Names: map[string]string{"@a": "p2p_messages"}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	for m, want := range map[string]string{"@a": "gotrace_p2p_messages", "@": "gotrace_map", "@x_1": "gotrace_x_1"} {
		if got := cfg.MetricName(m); got != want {
			t.Errorf("MetricName(%s) = %s, want %s", m, got, want)
		}
	}
}

// TestNoSource collects nothing before the maps exist and after.
func TestNoSource(t *testing.T) {
	if got := gather(t, Config{}, nil); got != "" {
		t.Errorf("got %q", got)
	}
}

// TestNegotiate picks the format from the Accept header as the client
// library did: OpenMetrics only for a scraper that prefers it.
func TestNegotiate(t *testing.T) {
	for _, tc := range []struct {
		accept string
		want   format
	}{
		{"", textFormat},
		{"*/*", textFormat},
		{"text/plain;version=0.0.4", textFormat},
		// Prometheus 2.x's header.
		{"application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1", openMetricsFormat},
		{"application/openmetrics-text; version=1.0.0", openMetricsFormat},
		{"text/plain;q=0.9,application/openmetrics-text;q=0.5", textFormat},
		{"application/openmetrics-text;q=0", textFormat},
	} {
		if got := negotiate(tc.accept); got != tc.want {
			t.Errorf("negotiate(%q) = %s, want %s", tc.accept, got.contentType, tc.want.contentType)
		}
	}
}

// TestClashes leaves out a map whose metric would be mistaken for
// another's, and a map whose keys do not fit its labels, serving the rest.
func TestClashes(t *testing.T) {
	one := []output.Entry{{Value: output.Uint(1)}}
	got := gather(t, Config{Labels: map[string][]string{"@pair": {"a", "b"}}}, []*output.Map{
		{Name: "@h", Kind: layout.MapHist, Entries: []output.Entry{{Buckets: []uint64{0, 1}}}},
		{Name: "@h_count", Kind: layout.MapValue, Entries: one},
		{Name: "@a", Kind: layout.MapCount, Entries: one},
		{Name: "@a_total", Kind: layout.MapValue, Entries: one},
		{Name: "@pair", Kind: layout.MapCount, Entries: one},
	})
	for _, want := range []string{"gotrace_h_count 1\n", "gotrace_a_total 1\n", "# TYPE gotrace_a_total counter\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	for _, bad := range []string{"gauge", "pair"} {
		if strings.Contains(got, bad) {
			t.Errorf("%q served:\n%s", bad, got)
		}
	}
}

// TestUnreadable serves gotrace_maps_unreadable when the maps cannot be
// read.
func TestUnreadable(t *testing.T) {
	c := NewCollector(Config{})
	c.SetSource(func() ([]*output.Map, error) { return nil, errors.New("map gone") })
	var b bytes.Buffer
	if err := textFormat.write(&b, c.collect()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "gotrace_maps_unreadable 1\n") {
		t.Errorf("got\n%s", b.String())
	}
}
