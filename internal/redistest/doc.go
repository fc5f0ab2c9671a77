// Package redistest starts and controls real redis-server processes for
// integration tests.
//
// Start launches k independent masters on free loopback ports, each in its
// own temporary directory, and stops them when the test ends. A Server can
// be killed, paused (SIGSTOP), resumed and restarted on the same port, and
// with WithProxy every server sits behind an in-process TCP proxy that can
// add latency or cut connections; NewProxy adds further independent paths
// to the same server. It is a thin layer over internal/redisproc (the
// processes) and internal/tcpproxy (the proxies) that fails the test on
// errors and cleans up when the test ends.
//
// The package needs the redis-server binary on PATH (scripts/test installs
// it). It is meant to be imported from _test.go files only. Methods that
// change a server's state must be called from the test goroutine.
package redistest
