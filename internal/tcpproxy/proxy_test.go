package tcpproxy

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// echoServer starts a TCP server that writes back every byte it reads. It
// is stopped, with its connections, when t ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { _, _ = io.Copy(c, c) })
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

func newProxy(t *testing.T, target string) *Proxy {
	t.Helper()
	p, err := New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// roundTrip sends a line over c and reads it back.
func roundTrip(c net.Conn) (time.Duration, error) {
	begin := time.Now()
	if err := c.SetDeadline(begin.Add(time.Second)); err != nil {
		return 0, err
	}
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		return 0, err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return 0, err
	}
	if line != "ping\n" {
		return 0, io.ErrUnexpectedEOF
	}
	return time.Since(begin), nil
}

func mustRoundTrip(t *testing.T, c net.Conn) time.Duration {
	t.Helper()
	d, err := roundTrip(c)
	if err != nil {
		t.Fatalf("round trip through %s: %v", c.RemoteAddr(), err)
	}
	return d
}

func TestLatency(t *testing.T) {
	t.Parallel()
	p := newProxy(t, echoServer(t))
	c := dial(t, p.Addr())
	base := mustRoundTrip(t, c)

	p.SetLatency(30 * time.Millisecond)
	slow := mustRoundTrip(t, c)
	p.SetLatency(0)
	fast := mustRoundTrip(t, c)

	t.Logf("round trip: %v without latency, %v with 30ms, %v after reset", base, slow, fast)
	if slow < 60*time.Millisecond {
		t.Errorf("round trip with 30ms latency each way took %v, want >= 60ms", slow)
	}
	if fast >= slow {
		t.Errorf("latency not removed: %v after reset, %v with", fast, slow)
	}
}

func TestKeepsOrderOfLargeData(t *testing.T) {
	t.Parallel()
	p := newProxy(t, echoServer(t))
	p.SetLatency(2 * time.Millisecond)
	c := dial(t, p.Addr())
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i % 251)
	}
	if err := c.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := c.Write(data)
		errc <- err
	}()
	got := make([]byte, len(data))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Error("data came back altered")
	}
}

func TestCutHeal(t *testing.T) {
	t.Parallel()
	target := echoServer(t)
	p, other := newProxy(t, target), newProxy(t, target)
	c, oc := dial(t, p.Addr()), dial(t, other.Addr())
	mustRoundTrip(t, c)
	mustRoundTrip(t, oc)

	p.Cut()
	if _, err := roundTrip(c); err == nil {
		t.Error("round trip over an existing connection succeeded after Cut")
	}
	if _, err := roundTrip(dial(t, p.Addr())); err == nil {
		t.Error("round trip over a new connection succeeded after Cut")
	}
	mustRoundTrip(t, oc) // other proxies are independent paths

	p.Heal()
	mustRoundTrip(t, dial(t, p.Addr()))
}

func TestClose(t *testing.T) {
	t.Parallel()
	p, err := New(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, p.Addr())
	mustRoundTrip(t, c)

	p.Close() // returns only once every goroutine has ended
	if _, err := roundTrip(c); err == nil {
		t.Error("round trip over an existing connection succeeded after Close")
	}
	p.Close() // a second Close does nothing
}
