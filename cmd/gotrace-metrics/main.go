// Command gotrace-metrics is the network side of gotrace --metrics: gotrace
// starts it, and it serves the maps gotrace sends it over HTTP, or TLS
// with basic auth (--web.config.file). It is a program of its own so that
// gotrace does not link an HTTP server and TLS, whose initialisers would
// run at every start of gotrace (issue 24). See runtime/metrics/webserver
// and docs/metrics.md.
package main

import (
	"os"

	"github.com/gotrace/gotrace/runtime/metrics/webserver"
)

func main() {
	os.Exit(webserver.Main(os.Args[1:], os.Stderr))
}
