package client_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/seqsvr/seqsvr/client"
)

// The examples run against the real secure cluster TestMain starts:
// allocURLs are its allocsvrs, token a token with role client, caFile the
// CA of its certificates. The tags and the space were created fresh.

func Example() {
	c, err := client.New(allocURLs, client.WithToken(token), client.WithCAFile(caFile))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	id, err := c.NextID(ctx, "example-order") // retried on another allocsvr if one is down
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("first ID:", id)
	// Output: first ID: 1
}

func ExampleWithLocalBuffer() {
	// Batches of 1000 IDs per tag in this process: most NextID calls never
	// touch the network.
	c, err := client.New(allocURLs, client.WithToken(token), client.WithCAFile(caFile),
		client.WithLocalBuffer(1000))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close() // the IDs still buffered are dropped, never reused

	ctx := context.Background()
	for range 3 {
		id, err := c.NextID(ctx, "example-buffered")
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(id)
	}
	ids, err := c.NextIDs(ctx, "example-buffered", 4)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ids)
	// Output:
	// 1
	// 2
	// 3
	// [4 5 6 7]
}

func ExampleClient_NextSeqs() {
	c, err := client.New(allocURLs, client.WithToken(token), client.WithCAFile(caFile))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	// Each key of the space has its own sequence; a key may repeat.
	seqs, err := c.NextSeqs(ctx, "example-inbox", []uint64{42, 7, 42})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("key 42 twice:", seqs[2] > seqs[0])
	cur, err := c.CurrentSeqs(ctx, "example-inbox", []uint64{42})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("key 42 now at least its last value:", cur[0] >= seqs[2])
	// Output:
	// key 42 twice: true
	// key 42 now at least its last value: true
}

func ExampleClient_NextSnowflakeID() {
	c, err := client.New(allocURLs, client.WithToken(token), client.WithCAFile(caFile),
		client.WithProtocol(client.ProtocolGRPC))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	id, err := c.NextSnowflakeID(ctx)
	if err != nil {
		log.Fatal(err)
	}
	sf, err := c.DecodeSnowflake(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("issued within the last minute:", time.Since(sf.Time) < time.Minute)
	// Output: issued within the last minute: true
}
