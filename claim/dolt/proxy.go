package dolt

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gofrs/flock"
)

// A proxied-server workspace (bd v1.3's `bd init --proxied-server`) is
// served by a proxy that bd starts (`bd db-proxy-child`), in front of a
// dolt sql-server it starts in turn, both rooted at one directory. The proxy
// publishes itself in <root>/proxy.pid (JSON: pid, the data port, the
// control port, the root's identity...), and proves who it is on its
// control port: it answers `IDENT <secret> <nonce>` (the secret is
// <root>/proxy.secret, new at every start) with its identity, signed by
// HMAC-SHA256 keyed by the secret (internal/storage/dbproxy). Ports are
// reused, so a pid file left by a proxy that has gone can name a port that
// another workspace's proxy (or anything else) now listens on: a client
// trusts the data port only once the identity checks out, as bd's own
// clients do (proxy.readAndDial).

// ProxyTimeout bounds each step of the identity exchange, as bd's
// identityProbeTimeout does.
const ProxyTimeout = 500 * time.Millisecond

// NoProxy is a proxied-server workspace whose proxy is not running, or
// not one this workspace can trust.
type NoProxy struct {
	Root   string
	Reason string
}

func (e *NoProxy) Error() string {
	return fmt.Sprintf("no verified proxy serves the proxied-server workspace rooted at %s (%s)", e.Root, e.Reason)
}

// proxyRecord is <root>/proxy.pid (bd's pidfile.PidFile), and the identity a
// proxy signs on its control port (identity.IdentReply, whose canonical
// form is its fields in this order without the MAC).
type proxyRecord struct {
	Schema      int    `json:"schema"`
	Role        string `json:"role,omitempty"` // the reply's; the pid file's is Kind
	Kind        string `json:"kind,omitempty"`
	RootID      string `json:"root_id"`
	UpstreamID  string `json:"upstream_id"`
	PID         int    `json:"pid"`
	Birth       string `json:"birth"`
	Port        int    `json:"port,omitempty"`      // the pid file's data port
	DataPort    int    `json:"data_port,omitempty"` // the reply's
	ControlPort int    `json:"control_port"`
	MAC         string `json:"mac,omitempty"`
}

// signed is the HMAC-SHA256 of the nonce's bytes followed by the canonical
// JSON of the reply r (identity.SignIdentReply).
func (r proxyRecord) signed(secret string, nonce []byte) []byte {
	canonical, _ := json.Marshal(struct {
		Schema      int    `json:"schema"`
		Role        string `json:"role"`
		RootID      string `json:"root_id"`
		UpstreamID  string `json:"upstream_id"`
		PID         int    `json:"pid"`
		Birth       string `json:"birth"`
		DataPort    int    `json:"data_port"`
		ControlPort int    `json:"control_port"`
	}{r.Schema, r.Role, r.RootID, r.UpstreamID, r.PID, r.Birth, r.DataPort, r.ControlPort})
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(nonce)
	mac.Write(canonical)
	return mac.Sum(nil)
}

// VerifyProxy finds the proxy of the workspace rooted at root and returns
// its data port once it has proven who it is: a schema-2 db-proxy record
// in <root>/proxy.pid, whose control port answers IDENT with the record's
// own identity (pid, birth, ports, upstream) and the identity of this root
// (sha256 of its symlink-resolved path), signed with <root>/proxy.secret.
// Anything else is *NoProxy, and the data port is never dialled. bd also
// checks that the recorded process is alive with the recorded birth
// (/proc); the signed reply already proves that the process holding this
// start's secret answers for that pid and birth.
func VerifyProxy(ctx context.Context, root string) (int, error) {
	refuse := func(format string, args ...any) (int, error) {
		return 0, &NoProxy{Root: root, Reason: fmt.Sprintf(format, args...)}
	}
	resolved, err := filepath.EvalSymlinks(root)
	if err != nil {
		return refuse("%v", err)
	}
	rootID := sha256.Sum256([]byte(resolved))
	b, err := os.ReadFile(filepath.Join(root, "proxy.pid"))
	if err != nil {
		return refuse("no proxy.pid: %v", err)
	}
	var rec proxyRecord
	if err := json.Unmarshal(b, &rec); err != nil || rec.Schema < 2 || rec.Kind != "db-proxy" || rec.PID <= 0 || rec.Birth == "" ||
		!validPort(rec.Port) || !validPort(rec.ControlPort) {
		return refuse("proxy.pid is not a proxy record of schema 2")
	}
	secret, err := os.ReadFile(filepath.Join(root, "proxy.secret"))
	if err != nil {
		return refuse("no proxy.secret: %v", err)
	}
	reply, err := identify(ctx, rec.ControlPort, strings.TrimSpace(string(secret)))
	if err != nil {
		return refuse("the control port %d named by proxy.pid does not prove the workspace's identity: %v", rec.ControlPort, err)
	}
	if reply.Schema < 2 || reply.Role != "db-proxy" || reply.RootID != hex.EncodeToString(rootID[:]) || reply.RootID != rec.RootID ||
		reply.PID != rec.PID || reply.Birth != rec.Birth || reply.DataPort != rec.Port || reply.ControlPort != rec.ControlPort || reply.UpstreamID != rec.UpstreamID {
		return refuse("the proxy on control port %d serves another root or does not match proxy.pid", rec.ControlPort)
	}
	return rec.Port, nil
}

func validPort(p int) bool { return p >= 1 && p <= 65535 }

// identify asks the proxy on the loopback control port for its identity
// (identity.Identify) and checks the signature.
func identify(ctx context.Context, port int, secret string) (proxyRecord, error) {
	d := net.Dialer{Timeout: ProxyTimeout}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return proxyRecord{}, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(ProxyTimeout))
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails (Go 1.24+)
	var reply proxyRecord
	_, err = fmt.Fprintf(conn, "IDENT %s %s\n", secret, hex.EncodeToString(nonce))
	if err == nil {
		// A proxy that does not know the secret closes without a word.
		err = json.NewDecoder(bufio.NewReader(conn)).Decode(&reply)
	}
	if err != nil {
		return proxyRecord{}, err
	}
	if mac, _ := hex.DecodeString(reply.MAC); !hmac.Equal(mac, reply.signed(secret, nonce)) {
		return proxyRecord{}, fmt.Errorf("the reply's signature is wrong")
	}
	return reply, nil
}

// proxyPoll is how long a client waits before it asks a running proxy
// again, as bd's clients do (proxy.openPollInterval).
const proxyPoll = 100 * time.Millisecond

// ProxyDialer dials the data port of the verified proxy of the workspace
// rooted at root, verifying it anew for each connection: a proxy that
// stopped, or was replaced by another on another port, is found as it now
// is (the driver's mysql.Config.DialFunc). A proxy that is running (it
// holds <root>/proxy.lock, as bd's proxy does for its whole life, and as
// a bd command that starts one does until it has) but does not prove
// itself is asked again every proxyPoll, as bd's clients ask it, for at
// most wait: bd's proxy answers 8 identity requests at a time and closes
// any other at once without a word (its control.go), so under load a
// crowd of clients starting together finds it mute for a while. Without
// a running proxy it refuses at once, with the last refusal (*NoProxy).
func ProxyDialer(root string, wait time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, _, _ string) (net.Conn, error) {
		deadline := time.Now().Add(wait)
		for {
			conn, err := dialProxy(ctx, root)
			if err == nil || !time.Now().Add(proxyPoll).Before(deadline) || !ProxyRunning(root) {
				return conn, err
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(proxyPoll):
			}
		}
	}
}

// dialProxy dials the data port of the proxy of the workspace rooted at
// root, once it has proven itself (VerifyProxy).
func dialProxy(ctx context.Context, root string) (net.Conn, error) {
	port, err := VerifyProxy(ctx, root)
	if err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: 5 * time.Second} // the driver's dial timeout (config)
	return d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
}

// ProxyRunning says whether a process holds <root>/proxy.lock: bd's proxy
// (`bd db-proxy-child`) holds it exclusively while it runs, and so does a
// bd command that starts one, until the proxy takes over
// (dbproxy/proxy/server.go, endpoint.go). A lock that cannot be looked at
// (no such file: no proxy ever started there) is held by nobody. The look
// is a shared lock taken without waiting and let go at once.
func ProxyRunning(root string) bool {
	l := flock.New(filepath.Join(root, "proxy.lock"), flock.SetFlag(os.O_RDONLY))
	defer l.Close()
	free, err := l.TryRLock()
	return err == nil && !free
}
