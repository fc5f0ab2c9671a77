package engine_test

import (
	"fmt"
	"log"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

// Every key of a lock shares a Redis Cluster hash tag with its shard's
// keys.
func ExampleKeyspace_Lock() {
	ks, err := engine.NewKeyspace("billing")
	if err != nil {
		log.Fatal(err)
	}
	k, err := ks.Lock("nightly-invoices")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(k.Lock)
	fmt.Println(k.State)
	_, err = ks.Lock("bad{name}")
	fmt.Println(err)
	// Output:
	// billing:{s57}:nightly-invoices:lock
	// billing:{s57}:state
	// redcron: lock name "bad{name}": character '{' not allowed
}

// A lock value says who holds the lock and since when, for the leak scan.
func ExampleParseValue() {
	v := engine.Value{Token: "0123456789abcdef0123456789abcdef", Acquired: time.UnixMilli(1795240000000), Owner: "billing-7f9c"}
	got, err := engine.ParseValue(v.String())
	fmt.Println(v.String())
	fmt.Println(got.Owner, got.Acquired.UTC().Format(time.RFC3339), err)
	// Output:
	// rc1|0123456789abcdef0123456789abcdef|1795240000000|0|billing-7f9c
	// billing-7f9c 2026-11-21T05:46:40Z <nil>
}
