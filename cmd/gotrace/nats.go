package main

import (
	"io"

	"github.com/gotrace/gotrace/runtime/stream"
)

// startNATS starts the publisher (gotrace-nats) when --nats is given and
// returns the writer the run's capture goes to: the publisher, and the -w
// file as well when there is one. Without --nats it returns file and a
// nil helper.
func startNATS(cfg stream.Config, file io.Writer, stderr io.Writer) (io.Writer, *stream.Helper, error) {
	if cfg.URL == "" {
		return file, nil, nil
	}
	cfg.Version = version
	bus, err := stream.StartHelper(cfg, stream.ModeLive, stderr)
	if err != nil {
		return nil, nil, err
	}
	if file == nil {
		return bus, bus, nil
	}
	return io.MultiWriter(file, bus), bus, nil
}
