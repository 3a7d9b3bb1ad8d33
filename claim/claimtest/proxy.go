package claimtest

import (
	"bytes"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy forwards TCP connections to a server and, once, cuts the
// connection on which the client sends a statement containing Trigger:
// after forwarding it (the server runs it, the client never hears back)
// when Forward is set, else before (the server never sees it). It stands
// for a network or a server that fails in the middle of a claim.
type Proxy struct {
	Port    int
	Trigger []byte
	Forward bool
	Cut     atomic.Bool // the cut has happened
	ln      net.Listener
	wg      sync.WaitGroup
}

// NewProxy listens on a free loopback port and forwards to target
// (host:port) until the end of t.
func NewProxy(t testing.TB, target, trigger string, forward bool) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Port: ln.Addr().(*net.TCPAddr).Port, Trigger: []byte(trigger), Forward: forward, ln: ln}
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Go(func() { p.serve(c, target) })
		}
	})
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.Port)) }

func (p *Proxy) serve(client net.Conn, target string) {
	defer client.Close()
	server, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer server.Close()
	cut := make(chan struct{})        // closed once the trigger is seen
	replied := make(chan struct{}, 1) // the server answered the trigger
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := server.Read(buf)
			if err != nil {
				return
			}
			select {
			case <-cut:
				replied <- struct{}{}
				return
			default:
			}
			if _, err := client.Write(buf[:n]); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := client.Read(buf)
		if err != nil {
			return
		}
		chunk := buf[:n]
		if bytes.Contains(chunk, p.Trigger) && p.Cut.CompareAndSwap(false, true) {
			close(cut)
			if p.Forward {
				_, _ = server.Write(chunk)
				select { // the server has run it once it answers
				case <-replied:
				case <-time.After(30 * time.Second):
				}
			}
			return // closes the client's connection
		}
		if _, err := server.Write(chunk); err != nil {
			return
		}
	}
}
