package redisproc

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// start starts a server for t, which kills it when the test ends.
func start(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Kill)
	return s
}

func config(t *testing.T, args ...string) Config {
	t.Helper()
	bin, err := BinPath()
	if err != nil {
		t.Fatal(err)
	}
	return Config{Bin: bin, Dir: t.TempDir(), Args: args}
}

func mustAnswer(t *testing.T, s *Server) {
	t.Helper()
	if err := probe(s.Addr(), s.Pid()); err != nil {
		t.Fatalf("server %s: %v", s.Addr(), err)
	}
}

func TestStartKillRestart(t *testing.T) {
	t.Parallel()
	s := start(t, config(t))
	mustAnswer(t, s)
	addr, pid := s.Addr(), s.Pid()

	s.Kill()
	if s.Running() {
		t.Error("Running() = true after Kill")
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("pid %d still exists after Kill (kill 0: %v)", pid, err)
	}
	s.Kill() // killing a dead server does nothing
	if err := s.Pause(); err == nil {
		t.Error("Pause of a killed server succeeded")
	}

	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if s.Addr() != addr || s.Pid() == pid || !s.Running() {
		t.Errorf("after Restart: Addr() = %s, Pid() = %d, Running() = %t; want %s, a new pid, true",
			s.Addr(), s.Pid(), s.Running(), addr)
	}
	mustAnswer(t, s)
}

func TestPauseResume(t *testing.T) {
	t.Parallel()
	s := start(t, config(t))
	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	if !s.Running() {
		t.Error("Running() = false for a paused server")
	}
	if err := probe(s.Addr(), s.Pid()); err == nil {
		t.Error("a paused server answered")
	}
	if err := s.Resume(); err != nil {
		t.Fatal(err)
	}
	mustAnswer(t, s)
	if err := s.Pause(); err != nil { // left paused: Kill must still end it
		t.Fatal(err)
	}
}

func TestLaunchDetectsPortInUse(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s := &Server{cfg: config(t), port: ln.Addr().(*net.TCPAddr).Port}

	if err := s.launch(); !errors.Is(err, errAddrInUse) {
		if err == nil {
			s.Kill()
		}
		t.Fatalf("launch on a taken port: err = %v, want errAddrInUse", err)
	}
}

func TestBadArgsFailWithLog(t *testing.T) {
	t.Parallel()
	s, err := Start(config(t, "--no-such-directive", "1"))
	if err == nil {
		s.Kill()
		t.Fatal("Start with a bad argument succeeded")
	}
	if !strings.Contains(err.Error(), "Bad directive or wrong number of arguments") {
		t.Errorf("Start with a bad argument: err = %v, want the server's log", err)
	}
}

func TestBinPath(t *testing.T) {
	fallback := filepath.Join(t.TempDir(), "redis-server")
	if err := os.WriteFile(fallback, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir())

	if _, err := BinPath(); err == nil || !strings.Contains(err.Error(), "redis-server not found on PATH") {
		t.Errorf("BinPath() with an empty PATH: err = %v, want not found", err)
	}
	if got, err := BinPath(filepath.Join(t.TempDir(), "missing"), fallback); got != fallback || err != nil {
		t.Errorf("BinPath(missing, %s) = %q, %v; want the fallback", fallback, got, err)
	}
}

func TestProbeChecksPid(t *testing.T) {
	t.Parallel()
	// A server that owns the port must not pass for the one just started.
	s := start(t, config(t))
	if err := probe(s.Addr(), s.Pid()+1); err == nil {
		t.Error("probe accepted the answer of another process")
	}
}

func TestTLSPort(t *testing.T) {
	t.Parallel()
	cfg, pool := tlsConfig(t)
	s := start(t, cfg)
	mustAnswer(t, s)
	conn, err := tls.Dial("tcp", s.TLSAddr(), &tls.Config{RootCAs: pool})
	if err != nil {
		t.Fatalf("TLS dial %s: %v", s.TLSAddr(), err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, "PING\r\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(conn).ReadString('\n'); line != "+PONG\r\n" {
		t.Fatalf("PING over TLS on %s answered %q (%v)", s.TLSAddr(), line, err)
	}
	if s.TLSAddr() == s.Addr() {
		t.Errorf("TLSAddr() = Addr() = %s", s.Addr())
	}
	if got := start(t, config(t)).TLSAddr(); got != "" {
		t.Errorf("TLSAddr() = %q without Config.TLSPort, want \"\"", got)
	}
}

func TestLaunchDetectsTLSPortInUse(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg, _ := tlsConfig(t)
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{cfg: cfg, port: port, tlsPort: ln.Addr().(*net.TCPAddr).Port}

	if err := s.launch(); !errors.Is(err, errAddrInUse) {
		if err == nil {
			s.Kill()
		}
		t.Fatalf("launch on a taken TLS port: err = %v, want errAddrInUse", err)
	}
}

// tlsConfig returns the configuration of a server with a TLS port and a
// self-signed certificate for 127.0.0.1, which clients need not present,
// and a pool that trusts the certificate.
func tlsConfig(t *testing.T) (Config, *x509.CertPool) {
	t.Helper()
	cfg := config(t)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "redisproc test"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath := filepath.Join(cfg.Dir, "cert.pem"), filepath.Join(cfg.Dir, "key.pem")
	for path, block := range map[string]*pem.Block{certPath: {Type: "CERTIFICATE", Bytes: der}, keyPath: {Type: "PRIVATE KEY", Bytes: keyDER}} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	cfg.TLSPort = true
	cfg.Args = []string{"--tls-cert-file", certPath, "--tls-key-file", keyPath,
		"--tls-ca-cert-file", certPath, "--tls-auth-clients", "no"}
	return cfg, pool
}
