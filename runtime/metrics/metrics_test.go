package metrics

import (
	"bytes"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gotrace/gotrace/codegen/layout"
	"github.com/gotrace/gotrace/runtime/output"
)

var update = flag.Bool("update", false, "rewrite the golden exposition files")

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

// gather serves maps through a Collector and returns the exposition text.
func gather(t *testing.T, cfg Config, maps []*output.Map) string {
	t.Helper()
	c := NewCollector(cfg)
	c.SetSource(func() ([]*output.Map, error) { return maps, nil })
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, f := range families {
		if _, err := expfmt.MetricFamilyToText(&b, f); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// TestGolden compares the exposition of every map kind with
// testdata/NAME.txt and parses it back with the client library's parser.
func TestGolden(t *testing.T) {
	for name, maps := range mapsByKind {
		t.Run(name, func(t *testing.T) {
			cfg := Config{}
			if name == "sum_tuple" {
				cfg.Labels = map[string][]string{"@bytes": {"peer", "command"}}
			}
			got := gather(t, cfg, maps)
			path := filepath.Join("testdata", name+".txt")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("exposition differs from %s:\n%s", path, got)
			}
			parser := expfmt.NewTextParser(model.UTF8Validation)
			if _, err := parser.TextToMetricFamilies(strings.NewReader(got)); err != nil {
				t.Errorf("the client library cannot parse it back: %v", err)
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

// TestServe serves a scrape over HTTP and reports an address in use.
func TestServe(t *testing.T) {
	c := NewCollector(Config{})
	c.SetSource(func() ([]*output.Map, error) { return mapsByKind["count"], nil })
	s, err := Serve("127.0.0.1:0", c)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := Serve(s.Addr().String(), NewCollector(Config{})); err == nil {
		t.Error("a second server on the same address started")
	}
	resp, err := httpGet("http://" + s.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(resp, `gotrace_msgs_total{key="ping"} 12`) {
		t.Errorf("scrape:\n%s", resp)
	}
}

func httpGet(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
