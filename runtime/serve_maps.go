package runtime

import (
	"fmt"

	"github.com/gotrace/gotrace/codegen"
	"github.com/gotrace/gotrace/runtime/capture"
	"github.com/gotrace/gotrace/runtime/metrics"
	"github.com/gotrace/gotrace/runtime/output"
)

// checkMetrics checks the metrics configuration against the compiled
// maps, before anything is loaded: a name or label list for a map the
// script does not have, or a label list whose length is not the key's, is
// an error; a map that cannot be a metric is said in a warning and left
// out.
func (pr *printer) checkMetrics() error {
	c := pr.opts.Metrics
	if c == nil {
		return nil
	}
	cfg := c.Config()
	keyLen := map[string]int{}
	for _, m := range pr.spec.Maps {
		keyLen[m.Name] = len(m.KeyFields)
		if !metrics.Exportable(m.Kind, m.Value) && !pr.opts.NoWarnings {
			fmt.Fprintf(pr.opts.Err, "WARNING: --metrics: map %s holds values that are not numbers; it is not served as a metric\n", m.Name)
		}
	}
	for name := range cfg.Names {
		if _, ok := keyLen[name]; !ok {
			return fmt.Errorf("--metric-name %s: the script has no map %s", name, name)
		}
	}
	for name, labels := range cfg.Labels {
		n, ok := keyLen[name]
		if !ok {
			return fmt.Errorf("--metric-labels %s: the script has no map %s", name, name)
		}
		if len(labels) != n {
			return fmt.Errorf("--metric-labels %s: %d label names for keys of %d elements", name, len(labels), n)
		}
	}
	return nil
}

// metricMaps reads, for a scrape, every map that can be a metric as it is
// now; the probes keep running.
func (pr *printer) metricMaps() ([]*output.Map, error) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.coll == nil {
		return nil, fmt.Errorf("read maps: the trace has ended")
	}
	// A scrape is no part of a capture (-w): what it reads is not
	// recorded. Every use of pr.capture holds pr.mu.
	defer func(c *capture.Writer) { pr.capture = c }(pr.capture)
	pr.capture = nil
	return pr.outputMapsWhere(func(m *codegen.Map) bool { return metrics.Exportable(m.Kind, m.Value) })
}
