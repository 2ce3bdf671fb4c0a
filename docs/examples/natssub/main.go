// Command natssub is docs/streams.md's subscriber: it prints every message
// of gotrace's stream, from every node, in the order the stream holds
// them, with the node, the kind and the run's sequence number.
//
//	go run ./docs/examples/natssub nats://127.0.0.1:4222 GOTRACE
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func main() {
	nc, err := nats.Connect(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	js, _ := jetstream.New(nc)
	c, err := js.OrderedConsumer(context.Background(), os.Args[2], jetstream.OrderedConsumerConfig{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	c.Consume(func(m jetstream.Msg) {
		h := m.Headers()
		fmt.Printf("%-8s %-5s %s\n", h.Get("Gotrace-Host"), h.Get("Gotrace-Seq"), m.Data())
	})
	select {}
}
