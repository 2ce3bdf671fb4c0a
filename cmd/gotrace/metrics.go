package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gotrace/gotrace/runtime/metrics"
)

// metricFlags are the flags of --metrics: where to serve the maps and how
// to name them.
type metricFlags struct {
	addr      string
	names     []string
	labels    []string
	maxSeries int
}

func (m *metricFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&m.addr, "metrics", "", "serve the maps at http://`ADDR`/metrics for Prometheus while the script runs (:9435, 127.0.0.1:9435); see docs/metrics.md")
	fs.StringArrayVar(&m.names, "metric-name", nil, "name the metric of a map: `@MAP=NAME` serves @MAP as gotrace_NAME")
	fs.StringArrayVar(&m.labels, "metric-labels", nil, "name the labels of a map's key elements: `@MAP=L1,L2,...` (default key, or key0, key1, ...)")
	fs.IntVar(&m.maxSeries, "metrics-max-series", metrics.DefaultMaxSeries, "serve at most `N` series of one map per scrape; gotrace_series_dropped counts the rest")
}

// config builds the collector's configuration from the flags.
func (m *metricFlags) config() (metrics.Config, error) {
	cfg := metrics.Config{Names: map[string]string{}, Labels: map[string][]string{}, MaxSeries: m.maxSeries}
	if m.maxSeries <= 0 {
		return cfg, fmt.Errorf("--metrics-max-series %d: want a positive number", m.maxSeries)
	}
	for _, s := range m.names {
		name, value, err := mapSetting("--metric-name", s)
		if err != nil {
			return cfg, err
		}
		cfg.Names[name] = value
	}
	for _, s := range m.labels {
		name, value, err := mapSetting("--metric-labels", s)
		if err != nil {
			return cfg, err
		}
		cfg.Labels[name] = strings.Split(value, ",")
	}
	return cfg, cfg.Validate()
}

// mapSetting splits a flag's @MAP=VALUE.
func mapSetting(flag, s string) (name, value string, err error) {
	name, value, ok := strings.Cut(s, "=")
	if !ok || !strings.HasPrefix(name, "@") || value == "" {
		return "", "", fmt.Errorf("%s %q: want @MAP=VALUE", flag, s)
	}
	return name, value, nil
}

// start serves the metrics when --metrics is given and returns the
// collector for the runtime and a function that stops the server. A
// server that cannot listen (an address in use) is a warning: the trace
// runs and prints its maps at exit as usual.
func (m *metricFlags) start(stderr io.Writer) (*metrics.Collector, func(), error) {
	if m.addr == "" {
		return nil, func() {}, nil
	}
	cfg, err := m.config()
	if err != nil {
		return nil, nil, err
	}
	c := metrics.NewCollector(cfg)
	srv, err := metrics.Serve(m.addr, c)
	if err != nil {
		fmt.Fprintf(stderr, "WARNING: --metrics: %v; the trace runs without serving metrics\n", err)
		return nil, func() {}, nil
	}
	return c, func() { srv.Close() }, nil
}
