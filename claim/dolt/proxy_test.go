package dolt

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofrs/flock"
	"gotest.tools/v3/assert"
)

// fakeProxy is a proxy's control listener as bd's (proxy/control.go): it
// answers `IDENT <secret> <nonce>` with reply signed for the nonce, and
// closes without a word on a wrong secret, and on the first mute requests
// (as bd's proxy does with those beyond the 8 it answers at a time). mac,
// when set, replaces the signature.
type fakeProxy struct {
	secret string
	reply  proxyRecord
	mac    string
	ln     net.Listener
	mute   atomic.Int32
}

func newFakeProxy(t *testing.T, secret string) *fakeProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	assert.NilError(t, err)
	t.Cleanup(func() { ln.Close() })
	f := &fakeProxy{secret: secret, ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go f.serve(c)
		}
	}()
	return f
}

func (f *fakeProxy) port() int { return f.ln.Addr().(*net.TCPAddr).Port }

func (f *fakeProxy) serve(c net.Conn) {
	defer c.Close()
	// The request is read first, muted or not: a socket closed with the
	// request unread sends a reset, not an end of stream, so the client's
	// refusal would read EOF or "connection reset" by how the two raced.
	line, _ := bufio.NewReader(c).ReadString('\n')
	if f.mute.Add(-1) >= 0 {
		return
	}
	parts := strings.Fields(line)
	if len(parts) != 3 || parts[0] != "IDENT" || parts[1] != f.secret {
		return
	}
	nonce, _ := hex.DecodeString(parts[2])
	r := f.reply
	r.MAC = hex.EncodeToString(r.signed(f.secret, nonce))
	if f.mac != "" {
		r.MAC = f.mac
	}
	_ = json.NewEncoder(c).Encode(r)
}

// proxiedRoot makes a proxy root whose proxy.pid names a proxy with
// control port control and data port data, and whose proxy.secret is
// secret; it returns the root and the record.
func proxiedRoot(t *testing.T, control, data int, secret string) (string, proxyRecord) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	assert.NilError(t, err)
	id := sha256.Sum256([]byte(root))
	rec := proxyRecord{Schema: 2, Kind: "db-proxy", RootID: hex.EncodeToString(id[:]), UpstreamID: hex.EncodeToString(id[:]),
		PID: 4242, Birth: "linux-v1:boot:123", Port: data, ControlPort: control}
	b, err := json.Marshal(rec)
	assert.NilError(t, err)
	assert.NilError(t, os.WriteFile(filepath.Join(root, "proxy.pid"), b, 0o644))
	assert.NilError(t, os.WriteFile(filepath.Join(root, "proxy.secret"), []byte(secret+"\n"), 0o600))
	return root, rec
}

// replyOf is the identity a proxy publishing rec signs.
func replyOf(rec proxyRecord) proxyRecord {
	r := rec
	r.Role, r.Kind, r.DataPort, r.Port = "db-proxy", "", rec.Port, 0
	return r
}

// A proxy is trusted only once it proves, on the control port proxy.pid
// names, that it is the proxy of this root with this start's secret, and
// that it is the process proxy.pid describes; anything else is refused
// (*NoProxy) without the data port ever being dialled. The real proxy's
// side is the conformance suite's and TestProxiedRefusals' (the real bd).
func TestProxiedVerify(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const secret = "6f1d2c3b4a5968778695a4b3c2d1e0f00112233445566778899aabbccddeeff0"
	data, err := net.Listen("tcp", "127.0.0.1:0") // the data port the dialer reaches once verified
	assert.NilError(t, err)
	t.Cleanup(func() { data.Close() })
	dataPort := data.Addr().(*net.TCPAddr).Port
	f := newFakeProxy(t, secret)
	root, rec := proxiedRoot(t, f.port(), dataPort, secret)
	f.reply = replyOf(rec)

	port, err := VerifyProxy(ctx, root)
	assert.NilError(t, err)
	assert.Equal(t, port, dataPort)
	link := filepath.Join(t.TempDir(), "link") // the identity of a root is its real path's
	assert.NilError(t, os.Symlink(root, link))
	port, err = VerifyProxy(ctx, link)
	assert.NilError(t, err)
	assert.Equal(t, port, dataPort)
	conn, err := ProxyDialer(root, time.Minute)(ctx, "tcp", "ignored:0")
	assert.NilError(t, err)
	conn.Close()

	refused := func(root, reason string) {
		t.Helper()
		_, err := VerifyProxy(ctx, root)
		var np *NoProxy
		assert.Assert(t, errors.As(err, &np), "%v", err)
		assert.Equal(t, KindOf(err), ProxyDown)
		assert.ErrorContains(t, err, reason)
		began := time.Now()
		_, err = ProxyDialer(root, time.Minute)(ctx, "tcp", "ignored:0")
		assert.Assert(t, errors.As(err, &np), "%v", err)
		assert.Assert(t, time.Since(began) < 30*time.Second, "no proxy runs (proxy.lock is free): refused at once, not after the wait")
	}

	// The secret is not this start's (tampered, or the file of another
	// start): the proxy says nothing.
	tampered, _ := proxiedRoot(t, f.port(), dataPort, strings.Repeat("0", 64))
	refused(tampered, "does not prove the workspace's identity: EOF")

	// A stale proxy.pid whose ports are now another workspace's proxy's,
	// with this root's secret copied: it proves it serves another root.
	stale, _ := proxiedRoot(t, f.port(), dataPort, secret)
	refused(stale, "serves another root or does not match proxy.pid")

	// The right root, but not the process proxy.pid describes.
	other := replyOf(rec)
	other.PID++
	g := newFakeProxy(t, secret)
	g.reply = other
	moved, _ := proxiedRoot(t, g.port(), dataPort, secret)
	g.reply.RootID = recordOf(t, moved).RootID
	refused(moved, "does not match proxy.pid")

	// A listener that knows the secret but cannot sign.
	h := newFakeProxy(t, secret)
	forged, frec := proxiedRoot(t, h.port(), dataPort, secret)
	h.reply, h.mac = replyOf(frec), "00"
	refused(forged, "the reply's signature is wrong")

	// Nothing listens on the control port any more.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	assert.NilError(t, err)
	dead := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	gone, _ := proxiedRoot(t, dead, dataPort, secret)
	refused(gone, "connection refused")

	malformed, _ := proxiedRoot(t, f.port(), dataPort, secret)
	assert.NilError(t, os.WriteFile(filepath.Join(malformed, "proxy.pid"), []byte(`{"pid":1,"port":1,"schema":1}`), 0o644))
	refused(malformed, "proxy.pid is not a proxy record of schema 2")

	nosecret, _ := proxiedRoot(t, f.port(), dataPort, secret)
	assert.NilError(t, os.Remove(filepath.Join(nosecret, "proxy.secret")))
	refused(nosecret, "no proxy.secret")

	refused(t.TempDir(), "no proxy.pid")
	refused(filepath.Join(t.TempDir(), "missing"), "no such file or directory")
}

func recordOf(t *testing.T, root string) proxyRecord {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "proxy.pid"))
	assert.NilError(t, err)
	var rec proxyRecord
	assert.NilError(t, json.Unmarshal(b, &rec))
	return rec
}

// A proxy that runs (it holds <root>/proxy.lock, as bd's does) but closes
// the first identity requests without a word, as bd's proxy closes those
// beyond the 8 it answers at a time, is asked again within the wait and
// trusted once it answers; one that stays mute for the whole wait is
// refused with its refusal (*NoProxy); a signal stops the asking. Without
// a running proxy the first refusal stands, whatever the wait.
func TestProxyDialerAsksAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const secret = "0f1d2c3b4a5968778695a4b3c2d1e0f00112233445566778899aabbccddeeff0"
	data, err := net.Listen("tcp", "127.0.0.1:0")
	assert.NilError(t, err)
	t.Cleanup(func() { data.Close() })
	f := newFakeProxy(t, secret)
	root, rec := proxiedRoot(t, f.port(), data.Addr().(*net.TCPAddr).Port, secret)
	f.reply = replyOf(rec)

	f.mute.Store(1)
	_, err = ProxyDialer(root, time.Minute)(ctx, "tcp", "ignored:0")
	assert.ErrorContains(t, err, "does not prove the workspace's identity: EOF", "no proxy.lock held: no proxy runs")
	assert.Equal(t, f.mute.Load(), int32(0), "asked once")

	running := flock.New(filepath.Join(root, "proxy.lock"))
	locked, err := running.TryLock()
	assert.Assert(t, err == nil && locked, "%v", err)
	defer running.Close()
	f.mute.Store(3)
	conn, err := ProxyDialer(root, time.Minute)(ctx, "tcp", "ignored:0")
	assert.NilError(t, err)
	conn.Close()
	assert.Equal(t, f.mute.Load(), int32(-1), "asked four times: three refusals, then the answer")

	f.mute.Store(1 << 30)
	began := time.Now()
	_, err = ProxyDialer(root, 350*time.Millisecond)(ctx, "tcp", "ignored:0")
	var np *NoProxy
	assert.Assert(t, errors.As(err, &np), "%v", err)
	assert.Assert(t, time.Since(began) >= 250*time.Millisecond, "asked again for the wait: %v", time.Since(began))
	asked := 1<<30 - f.mute.Load()
	assert.Assert(t, asked >= 3, "asked %d times", asked)

	cancelled, cancel := context.WithCancel(ctx)
	time.AfterFunc(200*time.Millisecond, cancel)
	_, err = ProxyDialer(root, time.Minute)(cancelled, "tcp", "ignored:0")
	assert.ErrorIs(t, err, context.Canceled)
}
