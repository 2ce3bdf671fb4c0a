// Command natssub is docs/streams.md's subscriber: it prints every message
// of gotrace's stream, from every node, in the order the stream holds
// them, with the node and the run's sequence number.
//
//	go run ./docs/examples/natssub nats://127.0.0.1:4222 GOTRACE
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func main() {
	nc, err := nats.Connect(os.Args[1])
	if err != nil {
		log.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	c, err := js.OrderedConsumer(context.Background(), os.Args[2], jetstream.OrderedConsumerConfig{})
	if err != nil {
		log.Fatal(err)
	}
	c.Consume(func(m jetstream.Msg) {
		fmt.Printf("%-5s %3s %s\n", m.Headers().Get("Gotrace-Host"), m.Headers().Get("Gotrace-Seq"), m.Data())
	})
	select {}
}
