// Package deploytest checks deploy/ against real processes: every metric
// name the Grafana dashboard (deploy/grafana) and the alert rules
// (deploy/prometheus) use is on a real cluster's /metrics, so a renamed
// metric breaks `make test`, not a pager at night. It holds only tests;
// deploy/'s own module checks the manifests, units and image.
package deploytest
