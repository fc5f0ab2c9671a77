// Package monitoring holds no code: it is the home of a Grafana dashboard
// (dashboard.json) and Prometheus rules (alerts.yml, with promtool unit
// tests in alerts_test.yml) for the metrics of
// github.com/redcron/redcron/metrics. See README.md.
//
// Its test runs promtool on the rules and on the dashboard's queries, and
// checks that every metric they name is one the metrics.Collector exports,
// so that neither can drift from the code.
package monitoring
