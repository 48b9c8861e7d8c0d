// Package peerbench compares the snowflake generator of package alloc with
// github.com/bwmarrin/snowflake and github.com/sony/sonyflake/v2 in the same
// run. It is a separate module so the peers stay out of the service's
// go.mod. Run: cd alloc/peerbench && go test -run '^$' -bench . -benchmem
//
// Every generator is limited by its layout (IDs per time unit per worker),
// so each result is reported as ids/ms and as of-limit, the ratio to its own
// layout's limit: 1.0 means the generator is never the bottleneck.
package peerbench
